/* Two executables include stats.h, configured differently: only b_stats.c
 * defines WITH_STATS, so only it compiles `stats++`. A header has one view,
 * so it keeps what either unit compiles, and the conditional is counted as
 * decided differently. In each program two threads call count().
 * Build: gcc -fsanitize=thread -g a_plain.c -lpthread */
#include <pthread.h>
#include "stats.h"
int hits;
int stats;

static void *run_plain(void *arg) {
    count();
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, run_plain, 0);
    pthread_create(&b, 0, run_plain, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
