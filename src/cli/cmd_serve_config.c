/*
 * cmd_serve_config.c — `mcgit serve-config`: each pool's current rendered
 * config to a machine at first boot, as MCO's Machine Config Server does.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"
#include "metrics/metrics.h"
#include "render/render.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define TYPE_IGNITION "application/vnd.coreos.ignition+json"
#define TYPE_CLOUD "text/cloud-config"
#define TYPE_SPEC "application/vnd.mcgit.rendered+json"

static int run(int argc, char **argv);

static const mcg_opt serve_opts[] = {
    MCG_OPT_VALUE('r', "repo", "R", "the config repo (a clone; verified and rendered)"),
    MCG_OPT_TRUST,
    MCG_OPT_REVOKED,
    MCG_OPT_VALUE('l', "listen", "HOST:PORT",
                  "where to listen (default 127.0.0.1:22623; port 0: any)"),
    MCG_OPT_VALUE('T', "token-file", "F", "the bearer token machines present (required)"),
    MCG_OPT_HELP,
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_serve_config = {
    .name = "serve-config",
    .summary = "serve each pool's current rendered config to machines at first boot",
    .usage = "usage: mcgit serve-config --repo R --trust F [--revoked K] --token-file F\n"
             "                          [--listen HOST:PORT]\n"
             "\n"
             "Serve GET /config/POOL over HTTP, as MCO's Machine Config Server does: the\n"
             "pool's current rendered config, read from the rendered branch of R after\n"
             "the source branch is verified against the trust root F and rendered (as\n"
             "`mcgit render --repo`; a source that does not verify or render moves\n"
             "nothing, the last good render is served and the answer says why in\n"
             "X-Mcgit-Render-Problem). By the request's Accept header:\n"
             "\n"
             "  application/vnd.coreos.ignition+json  (also */* or none) the Ignition\n"
             "            config (the spec's config, canonical JSON), for CoreOS-like hosts\n"
             "  text/cloud-config   cloud-init user-data for Debian: write_files for every\n"
             "            file, unit, drop-in and core's keys, runcmd for directories,\n"
             "            links, owners, unit enable/disable/mask, then\n"
             "            `systemctl enable --now mcgit-agent.service`\n"
             "  application/vnd.mcgit.rendered+json   the rendered spec.json itself, whose\n"
             "            SHA-256 is the config's name\n"
             "\n"
             "Every answer names what it served: X-Mcgit-Config (rendered-POOL-HASH),\n"
             "X-Mcgit-Spec-Sha256 (of spec.json; its first 32 hex digits are HASH),\n"
             "X-Mcgit-Rendered-Commit and X-Mcgit-Source-Commit (the signed commit it was\n"
             "rendered from). A request must carry `Authorization: Bearer TOKEN`, TOKEN\n"
             "the content of the token file (read on every request, compared in constant\n"
             "time): 401 otherwise. 404: no such pool; 406: an Accept it cannot serve;\n"
             "503: the repo cannot be read. Connections are bounded (128 in all, 8 per\n"
             "client address, 5 s per request). GET /metrics serves the process metrics.\n"
             "Runs until SIGTERM or SIGINT.\n",
    .run = run,
    .opts = serve_opts,
};

typedef struct serve_ctx {
    const char *repo, *trust, *revoked;
} serve_ctx;

static void header(mcg_route_answer *a, const char *name, const char *value)
{
    char *v = mcg_sprintf("%s: %s", name, value);
    for (char *p = v; *p; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    mcg_strv_push(&a->headers, v);
    free(v);
}

static void text(mcg_route_answer *a, unsigned status, const char *msg)
{
    a->status = status;
    mcg_buf_printf(&a->body, "%s\n", msg);
}

/* The format asked for: 0 Ignition, 1 cloud-init, 2 the spec; -1 none of them. */
static int wanted(const char *accept)
{
    if (strstr(accept, TYPE_SPEC))
        return 2;
    if (strstr(accept, TYPE_CLOUD))
        return 1;
    if (!*accept || strstr(accept, TYPE_IGNITION) || strstr(accept, "*/*") ||
        strstr(accept, "application/*") || strstr(accept, "application/json"))
        return 0;
    return -1;
}

static void on_config(void *arg, const char *pool, const char *accept, mcg_route_answer *a)
{
    const serve_ctx *c = arg;
    int fmt = wanted(accept);
    if (fmt < 0) {
        text(a, 406, "acceptable: " TYPE_IGNITION ", " TYPE_CLOUD ", " TYPE_SPEC);
        return;
    }
    mcg_served_config sc;
    mcg_err err = {0};
    char *problem = NULL;
    int rc = mcg_gitops_served_config(&sc, c->repo, c->trust, c->revoked, pool, &problem, &err);
    if (rc) {
        text(a, rc == MCG_ENOTFOUND ? 404 : 503, err.msg);
        free(problem);
        return;
    }
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(sc.spec, sc.spec_len, d);
    mcg_hex(d, sizeof(d), hex);
    char *prov = mcg_sprintf("rendered commit %s, source %s", sc.rendered, sc.source);
    if (fmt == 2) {
        mcg_buf_put(&a->body, sc.spec, sc.spec_len);
    } else {
        rc = fmt ? mcg_render_cloud_config(sc.spec, sc.spec_len, sc.name, prov, &a->body, &err)
                 : mcg_render_ignition_doc(sc.spec, sc.spec_len, &a->body, &err);
    }
    if (rc) {
        mcg_buf_free(&a->body);
        text(a, 503, err.msg);
    } else {
        a->status = 200;
        snprintf(a->type, sizeof(a->type), "%s",
                 fmt == 2 ? TYPE_SPEC
                 : fmt    ? TYPE_CLOUD
                          : TYPE_IGNITION);
        header(a, "X-Mcgit-Config", sc.name);
        header(a, "X-Mcgit-Spec-Sha256", hex);
        header(a, "X-Mcgit-Rendered-Commit", sc.rendered);
        header(a, "X-Mcgit-Source-Commit", sc.source);
        if (problem)
            header(a, "X-Mcgit-Render-Problem", problem);
    }
    free(prov);
    free(problem);
    mcg_gitops_served_free(&sc);
}

static int serve(const serve_ctx *c, const char *listen, const char *token_file)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    mcg_metrics *m = mcg_metrics_new();
    mcg_metrics_server *s = NULL;
    mcg_err err = {0};
    mcg_metrics_server_opts o = {.bind = listen,
                                 .metrics = m,
                                 .who = "serve-config",
                                 .route_prefix = "/config/",
                                 .route_token_file = token_file,
                                 .route = on_config,
                                 .route_ctx = (void *)c};
    if (mcg_metrics_serve(&s, &o, &err) != 0) {
        mcg_cli_error("serve-config", "%s", err.msg);
        mcg_metrics_free(m);
        return MCG_EXIT_FAIL;
    }
    printf("listening on port %u\n", mcg_metrics_server_port(s));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    mcg_metrics_server_free(s);
    mcg_metrics_free(m);
    return MCG_EXIT_OK;
}

static int run(int argc, char **argv)
{
    serve_ctx c = {0};
    const char *listen = "127.0.0.1:22623", *token = NULL;
    const mcg_optbind binds[] = {{'r', &c.repo, NULL},    {'t', &c.trust, NULL},
                                 {'K', &c.revoked, NULL}, {'l', &listen, NULL},
                                 {'T', &token, NULL},     MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_serve_config, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_serve_config, "unexpected argument '%s'", argv[optind]);
    if (!c.repo || !c.trust || !token)
        return mcg_cli_usage_error(&mcg_cmd_serve_config, "--repo, --trust and --token-file are "
                                                          "required");
    return serve(&c, listen, token);
}
