/* Two executables in one folder: `server` (server.c + stats.c) runs two
 * threads that bump the counter; `report` (report.c + stats.c) is single
 * threaded. report.c's accesses race with nothing.
 * Build: gcc -fsanitize=thread -g server.c stats.c -lpthread -o server
 *        gcc -g report.c stats.c -o report */
#include <pthread.h>
void bump(void);

static void *serve(void *arg) {
    bump();
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, serve, 0);
    pthread_create(&b, 0, serve, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
