void log_event(void) {
}
