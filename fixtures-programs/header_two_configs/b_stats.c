/* See a_plain.c. This program compiles the statistics counter too.
 * Build: gcc -fsanitize=thread -g b_stats.c -lpthread */
#define WITH_STATS 1
#include <pthread.h>
#include "stats.h"
int hits;
int stats;

static void *run_stats(void *arg) {
    count();
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, run_stats, 0);
    pthread_create(&b, 0, run_stats, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return stats;
}
