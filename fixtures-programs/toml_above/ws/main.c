/* A volatile flag: a race by C11, but the racelens.toml one folder up
 * asks for the old convention (volatile_is_sync), so nothing is reported.
 * Build: gcc -fsanitize=thread -g main.c -lpthread */
#include <pthread.h>
volatile int stop;

static void *w(void *arg) {
    while (!stop) { // NORACE
    }
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, w, 0);
    stop = 1; // NORACE
    pthread_join(t, 0);
    return 0;
}
