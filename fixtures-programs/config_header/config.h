#ifndef CONFIG_H
#define CONFIG_H
#define USE_LOCKS 1
#endif
