/*
 * The floor: the least a round trip or a connection can cost through this kernel, for bench/latency.sh to
 * read every tool's figure against. No framing, no statistics on the hot path, no threads: one socket, one
 * request and one reply per round trip; each round trip's time is stored in a preallocated array and the
 * median is taken after the run.
 *
 *   floor serve PROTO WAIT PORT|PATH          answer round trips (tcp, udp, unix; block or spin)
 *   floor ping PROTO WAIT HOST PORT|PATH SIZE SECONDS
 *                                             SIZE-byte round trips for SECONDS; prints "p50_us p99_us count"
 *   floor accept PORT                         accept, read a 12-byte request, write 1 byte, close; forever
 *   floor connect HOST PORT SECONDS           connect, 12-byte request, 1-byte reply, close, in a loop;
 *                                             prints "per_s p50_us count"
 *
 * spin: the socket is non-blocking and every receive is retried at once (busy polling), as sockperf's
 * --nonblocked and linkperf's --wait spin do. Build: cc -O2 -o floor bench/floor.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 20000000
#define MAX_SIZE 65536

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

static socklen_t address(const char *proto, const char *host, const char *where, struct sockaddr_storage *out) {
    memset(out, 0, sizeof(*out));
    if (is(proto, "unix")) {
        struct sockaddr_un *un = (struct sockaddr_un *)out;
        un->sun_family = AF_UNIX;
        strncpy(un->sun_path, where, sizeof(un->sun_path) - 1);
        return sizeof(*un);
    }
    struct sockaddr_in *in = (struct sockaddr_in *)out;
    in->sin_family = AF_INET;
    in->sin_port = htons((unsigned short)atoi(where));
    if (inet_pton(AF_INET, host, &in->sin_addr) != 1) die("address");
    return sizeof(*in);
}

static int open_socket(const char *proto) {
    int type = is(proto, "udp") ? SOCK_DGRAM : SOCK_STREAM;
    int s = socket(is(proto, "unix") ? AF_UNIX : AF_INET, type, 0);
    if (s < 0) die("socket");
    int one = 1;
    if (is(proto, "tcp")) setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    return s;
}

static void spin_mode(int s, const char *wait) {
    if (is(wait, "spin")) fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
}

/* Receives exactly `size` bytes (a stream) or one datagram; spins on EAGAIN. 0 when the peer closed. */
static ssize_t receive(int s, char *buffer, size_t size, int stream) {
    size_t got = 0;
    do {
        ssize_t n = recv(s, buffer + got, stream ? size - got : MAX_SIZE, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n < 0) die("recv");
        if (n == 0) return 0;
        if (!stream) return n;
        got += (size_t)n;
    } while (got < size);
    return (ssize_t)got;
}

static void serve(const char *proto, const char *wait, const char *where) {
    struct sockaddr_storage a;
    if (is(proto, "unix")) unlink(where);
    socklen_t len = address(proto, "127.0.0.1", where, &a);
    int l = open_socket(proto);
    if (bind(l, (struct sockaddr *)&a, len) < 0) die("bind");
    static char buffer[MAX_SIZE];
    if (is(proto, "udp")) {
        spin_mode(l, wait);
        for (;;) {
            struct sockaddr_storage from;
            socklen_t from_len = sizeof(from);
            ssize_t n;
            do n = recvfrom(l, buffer, sizeof(buffer), 0, (struct sockaddr *)&from, &from_len);
            while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
            if (n < 0) die("recvfrom");
            sendto(l, buffer, (size_t)n, 0, (struct sockaddr *)&from, from_len);
        }
    }
    if (listen(l, 16) < 0) die("listen");
    for (;;) {
        int s = accept(l, NULL, NULL);
        if (s < 0) continue;
        int one = 1;
        if (is(proto, "tcp")) setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        spin_mode(s, wait);
        /* The first 4 bytes of a connection give the message size of its round trips. */
        unsigned int size;
        if (receive(s, (char *)&size, sizeof(size), 1) <= 0 || size > MAX_SIZE) {
            close(s);
            continue;
        }
        while (receive(s, buffer, size, 1) > 0)
            if (send(s, buffer, size, 0) < 0) break;
        close(s);
    }
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void ping(const char *proto, const char *wait, const char *host, const char *where, unsigned int size,
                 double seconds) {
    struct sockaddr_storage a;
    socklen_t len = address(proto, host, where, &a);
    int s = open_socket(proto);
    if (connect(s, (struct sockaddr *)&a, len) < 0) die("connect");
    int stream = !is(proto, "udp");
    if (stream && send(s, &size, sizeof(size), 0) != sizeof(size)) die("send");
    spin_mode(s, wait);
    static char buffer[MAX_SIZE];
    double *samples = malloc(sizeof(double) * MAX_SAMPLES);
    if (!samples) die("malloc");
    size_t count = 0;
    double start = now_ns(), end = start + seconds * 1e9, t = start;
    while (t < end && count < MAX_SAMPLES) {
        double before = now_ns();
        if (send(s, buffer, size, 0) < 0) die("send");
        if (receive(s, buffer, size, stream) <= 0) die("closed");
        t = now_ns();
        samples[count++] = t - before;
    }
    qsort(samples, count, sizeof(double), by_value);
    printf("%.3f %.3f %zu\n", samples[count / 2] / 1e3, samples[count * 99 / 100] / 1e3, count);
}

static void accept_loop(const char *port) {
    struct sockaddr_storage a;
    socklen_t len = address("tcp", "127.0.0.1", port, &a);
    int l = open_socket("tcp");
    if (bind(l, (struct sockaddr *)&a, len) < 0) die("bind");
    if (listen(l, 1024) < 0) die("listen");
    char request[12];
    for (;;) {
        int s = accept(l, NULL, NULL);
        if (s < 0) continue;
        if (receive(s, request, sizeof(request), 1) > 0) send(s, "k", 1, 0);
        close(s);
    }
}

static void connect_loop(const char *host, const char *port, double seconds) {
    struct sockaddr_storage a;
    socklen_t len = address("tcp", host, port, &a);
    double *samples = malloc(sizeof(double) * MAX_SAMPLES);
    if (!samples) die("malloc");
    char request[12] = {0}, reply[1];
    size_t count = 0;
    double start = now_ns(), end = start + seconds * 1e9, t = start;
    while (t < end && count < MAX_SAMPLES) {
        double before = now_ns();
        int s = open_socket("tcp");
        if (connect(s, (struct sockaddr *)&a, len) < 0) die("connect");
        if (send(s, request, sizeof(request), 0) < 0) die("send");
        if (receive(s, reply, 1, 1) <= 0) die("closed");
        close(s);
        t = now_ns();
        samples[count++] = t - before;
    }
    qsort(samples, count, sizeof(double), by_value);
    printf("%.1f %.3f %zu\n", (double)count / ((t - start) / 1e9), samples[count / 2] / 1e3, count);
}

int main(int argc, char **argv) {
    if (argc == 5 && is(argv[1], "serve")) serve(argv[2], argv[3], argv[4]);
    else if (argc == 8 && is(argv[1], "ping")) {
        unsigned int size = (unsigned int)atoi(argv[6]);
        if (size == 0 || size > MAX_SIZE) die("size");
        ping(argv[2], argv[3], argv[4], argv[5], size, atof(argv[7]));
    } else if (argc == 3 && is(argv[1], "accept")) accept_loop(argv[2]);
    else if (argc == 5 && is(argv[1], "connect")) connect_loop(argv[2], argv[3], atof(argv[4]));
    else {
        fprintf(stderr, "usage: floor serve PROTO WAIT PORT|PATH | ping PROTO WAIT HOST PORT|PATH SIZE SECONDS |"
                        " accept PORT | connect HOST PORT SECONDS\n");
        return 2;
    }
    return 0;
}
