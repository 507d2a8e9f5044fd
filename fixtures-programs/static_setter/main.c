/* `server` (a.c) is assigned only the parameter of a.c's static `init`,
 * which is called with 1: it does not stay zero, though main.c's own
 * `init`, a different function of the same name, is only ever called with
 * 0. Both threads run the `if (server)` branch and race on `hits`.
 * Build: gcc -fsanitize=thread -g main.c a.c -lpthread
 * TSan, 20 runs: a.c:15 in each run. */
#include <pthread.h>
#include <stdio.h>

void setup_a(void);
void *run_a(void *arg);

void init(int verbose) {
    if (verbose)
        puts("starting");
}

int main(void) {
    pthread_t t[2];
    init(0);
    setup_a();
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], 0, run_a, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], 0);
    return 0;
}
