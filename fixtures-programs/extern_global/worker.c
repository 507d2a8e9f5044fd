extern int hits;

void *worker(void *arg) {
    hits++; // RACE
    return arg;
}
