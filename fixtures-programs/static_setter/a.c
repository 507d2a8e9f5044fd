static int server;
static int hits;

/* A static function of this unit, named like main.c's `init`. */
static void init(int srv) {
    server = srv;
}

void setup_a(void) {
    init(1);
}

void *run_a(void *arg) {
    if (server)
        hits++; // RACE
    return arg;
}
