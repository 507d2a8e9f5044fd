/* log_event() has two definitions: log_file.c (counts, racy when two
 * threads log) and log_null.c (does nothing). A build links one of them;
 * racelens analyses the program once with each, and notes the ambiguity.
 * Build: gcc -fsanitize=thread -g main.c log_file.c -lpthread */
#include <pthread.h>
void log_event(void);

static void *work(void *arg) {
    log_event();
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, work, 0);
    pthread_create(&b, 0, work, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
