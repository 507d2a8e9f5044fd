int logged;

void log_event(void) {
    logged++; // RACE
}
