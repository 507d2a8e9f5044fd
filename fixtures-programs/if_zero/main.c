/* The thread's write is compiled out by `#if 0`: nothing races.
 * Build: gcc -fsanitize=thread -g main.c -lpthread */
#include <pthread.h>
int shared;
int other;

static void *w(void *arg) {
#if 0
    shared = 1; // NORACE
#else
    other = 1; // RACE
#endif
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, w, 0);
    shared = 2; // NORACE
    other = 2; // RACE
    pthread_join(t, 0);
    return 0;
}
