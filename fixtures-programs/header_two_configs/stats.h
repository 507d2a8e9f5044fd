#ifndef STATS_H
#define STATS_H
extern int hits;
extern int stats;
static inline void count(void) {
    hits++; // RACE
#ifdef WITH_STATS
    stats++; // RACE
#endif
}
#endif
