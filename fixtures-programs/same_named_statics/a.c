static int counter;

void *run_a(void *arg) {
    counter++; // NORACE
    return arg;
}
