/*
 * The pod sandbox's process for tests/kube/cluster.sh (the role of the
 * "pause" image, which no registry here can supply): it holds the pod's
 * namespaces, reaps the zombies it inherits as PID 1 and exits 0 on SIGTERM
 * or SIGINT. Built static: the image holds this file only.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int main(void)
{
    struct sigaction a = {0};
    a.sa_handler = on_stop;
    sigaction(SIGTERM, &a, NULL);
    sigaction(SIGINT, &a, NULL);
    a.sa_handler = on_child;
    a.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &a, NULL);
    for (;;)
        pause();
    return 0;
}
