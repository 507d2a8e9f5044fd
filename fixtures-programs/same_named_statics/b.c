static int counter;

void *run_b(void *arg) {
    counter++; // NORACE
    return arg;
}
