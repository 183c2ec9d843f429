#ifndef TANDEM_VERSION_H
#define TANDEM_VERSION_H
#define TANDEM_VERSION "0.1.0"
#endif
