/* config.h defines USE_LOCKS, so the locked branch is the one compiled.
 * Build: gcc -fsanitize=thread -g main.c -lpthread */
#include <pthread.h>
#include "config.h"
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *add(void *arg) {
#ifndef USE_LOCKS
    total++; // NORACE
#else
    pthread_mutex_lock(&m);
    total++; // NORACE
    pthread_mutex_unlock(&m);
#endif
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, add, 0);
    pthread_create(&b, 0, add, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
