int requests;

void bump(void) {
    requests++; // RACE
}
