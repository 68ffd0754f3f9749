#!/usr/bin/env bash
# Fetching over https:// from a real TLS server, started here on 127.0.0.1:
# nginx in front of fcgiwrap and `git http-backend`, with a test CA and
# server certificates made by openssl. The CA comes from ca.crt in the
# credentials directory; a wrong CA, an expired certificate or a wrong host
# name is refused in one line, never retried without verification (the
# server logs no request), and the mirror's refs stay as they were. A token
# as forges hand it out (token: basic auth as x-access-token; bearerToken:
# Authorization: Bearer) is read from the directory and never shown, even
# with -v, and never sent to another host after a redirect (the other host's
# access log is checked for an Authorization header; a redirect within the
# host is followed). A server that
# never answers is stopped by the deadline. Proxies come from https_proxy and
# no_proxy (tinyproxy).
. "$(dirname "$0")/lib.sh"
# libgit2 1.5's leaks inside git_remote_connect_ext on refused connections
# (lsan-transport.supp); full stacks so that the suppression matches by name
export LSAN_OPTIONS="suppressions=$SRC/tests/integration/lsan-transport.supp"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
need git openssl python3 timeout jq
for b in /usr/sbin/nginx /usr/sbin/fcgiwrap /usr/lib/git-core/git-http-backend; do
  [ -x "$b" ] || skip "$b not found (nginx, fcgiwrap, git)"
done

PIDS=()
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do timeout 5 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null || true; done
}
trap 'stop_all; rm -rf "$T"' EXIT

# --- the config repo ------------------------------------------------------------
mkkey alice ed25519
signer_line alice@example.com alice >"$T/trust"
"$MCGIT" init "$T/src" >/dev/null
cp "$T/trust" "$T/src/.mcgit/allowed_signers"
sign_setup "$T/src" "$T/trust"
scommit "$T/src" alice "initial"
mkdir -p "$T/srv" "$T/tls" "$T/nginx/tmp"
git clone -q --bare "$T/src" "$T/srv/config.git"
push() { git -C "$T/src" push -q "$T/srv/config.git" main; }

# --- certificates: two CAs; good, expired and wrong-name server certificates -----
tls() { openssl "$@" >>"$T/tls/openssl.log" 2>&1; }
for ca in ca1 ca2; do
  tls req -x509 -newkey rsa:2048 -nodes -keyout "$T/tls/$ca.key" -out "$T/tls/$ca.crt" -days 3650 -subj "/CN=mcgit test $ca"
done
# cert NAME DNSNAME DAYS: NAME.{key,crt} for DNSNAME signed by ca1 (DAYS -1: expired)
cert() {
  tls req -newkey rsa:2048 -nodes -keyout "$T/tls/$1.key" -out "$T/tls/$1.csr" -subj "/CN=$2"
  printf 'subjectAltName=DNS:%s\n' "$2" >"$T/tls/$1.ext"
  tls x509 -req -in "$T/tls/$1.csr" -CA "$T/tls/ca1.crt" -CAkey "$T/tls/ca1.key" -CAcreateserial \
    -days "$3" -extfile "$T/tls/$1.ext" -out "$T/tls/$1.crt"
}
cert good localhost 30
cert expired localhost -1
cert wrongname git.example.test 30
[ -s "$T/tls/good.crt" ] && [ -s "$T/tls/expired.crt" ] && [ -s "$T/tls/wrongname.crt" ] \
  && ok "test CA and server certificates made" || { cat "$T/tls/openssl.log"; bad "openssl failed"; finish; exit 1; }

# --- nginx + fcgiwrap + git http-backend ----------------------------------------------
TOKEN=ghs_0123456789abcdefTOKENvalue
BASIC=$(printf 'x-access-token:%s' "$TOKEN" | base64 -w0)
P_GOOD=$(freeport); P_EXP=$(freeport); P_NAME=$(freeport); P_HOP=$(freeport); P_HOP2=$(freeport)
P_HOP3=$(freeport)
server() { # server PORT CERT
  cat <<EOF
  server {
    listen 127.0.0.1:$1 ssl;
    server_name localhost;
    ssl_certificate $T/tls/$2.crt;
    ssl_certificate_key $T/tls/$2.key;
    access_log $T/nginx/access-$2.log;
    location / {
      if (\$auth_ok = 0) { add_header WWW-Authenticate 'Basic realm="git"' always; return 401; }
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
      fastcgi_param GIT_PROJECT_ROOT $T/srv;
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO \$uri;
      fastcgi_pass unix:$T/nginx/fcgi.sock;
    }
  }
EOF
}
cat >"$T/nginx/nginx.conf" <<EOF
daemon off;
user $(id -un);
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log warn;
events { worker_connections 64; }
http {
  client_body_temp_path $T/nginx/tmp/body;
  proxy_temp_path $T/nginx/tmp/proxy;
  fastcgi_temp_path $T/nginx/tmp/fastcgi;
  uwsgi_temp_path $T/nginx/tmp/uwsgi;
  scgi_temp_path $T/nginx/tmp/scgi;
  map_hash_bucket_size 256;
  # what a credential looks like in a log: any Authorization header is logged
  log_format withauth '\$remote_addr "\$request" \$status auth="\$http_authorization"';
  map \$http_authorization \$auth_ok {
    default 0;
    "Basic $BASIC" 1;
    "Bearer $TOKEN" 1;
  }
$(server "$P_GOOD" good)
$(server "$P_EXP" expired)
$(server "$P_NAME" wrongname)
  # plain http: a redirect from 127.0.0.1 to another host name (localhost)
  server {
    listen 127.0.0.1:$P_HOP;
    access_log $T/nginx/access-hop.log;
    location / { return 302 http://localhost:$P_HOP2\$request_uri; }
  }
  # and one within the host (another port of 127.0.0.1)
  server {
    listen 127.0.0.1:$P_HOP3;
    access_log $T/nginx/access-hop3.log;
    location / { return 302 http://127.0.0.1:$P_HOP2\$request_uri; }
  }
  server {
    listen 127.0.0.1:$P_HOP2;
    access_log $T/nginx/access-hop2.log withauth;
    location / {
      if (\$auth_ok = 0) { add_header WWW-Authenticate 'Basic realm="git"' always; return 401; }
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
      fastcgi_param GIT_PROJECT_ROOT $T/srv;
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO \$uri;
      fastcgi_pass unix:$T/nginx/fcgi.sock;
    }
  }
}
EOF
# one process (with -c N it forks N children that outlive a kill of the parent)
/usr/sbin/fcgiwrap -s "unix:$T/nginx/fcgi.sock" >/dev/null 2>"$T/nginx/fcgiwrap.log" &
PIDS+=($!)
/usr/sbin/nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" -e "$T/nginx/error.log" >/dev/null 2>>"$T/nginx/error.log" &
PIDS+=($!)
wait_port "$P_GOOD" && wait_port "$P_EXP" && wait_port "$P_NAME" \
  || { cat "$T/nginx/error.log"; bad "nginx did not start"; finish; exit 1; }
ok "nginx listens on 127.0.0.1:$P_GOOD, $P_EXP, $P_NAME"

URL="https://localhost:$P_GOOD/config.git"
# credentials are private, as mcgit requires (0600 files, a 0700 directory)
umask 077
mkdir -p "$T/creds"
export MCGIT_GIT_CREDENTIALS="$T/creds"
git init -q --bare "$T/mirror"
git -C "$T/mirror" remote add origin "$URL"
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 20)
refs() { git -C "$T/mirror" for-each-ref --format='%(refname) %(objectname)'; }
# refused DESC PATTERN: fetch fails (exit 1) in one line naming the URL and matching PATTERN; refs unchanged
refused() {
  local before n
  before=$(refs)
  expect_rc 1 "$1: refused" -- "${FETCH[@]}"
  sed 's/^/# /' "$T/err"
  expect_grep "$2" "$T/err" "$1: the reason names the cause"
  grep -qF "$URL" "$T/err" && ok "$1: the reason names the remote" || bad "$1: no remote in: $(cat "$T/err")"
  n=$(sed '/^-----/,/^-----/d' "$T/err" | grep -c . || true)
  [ "$n" = 1 ] && ok "$1: one line" || bad "$1: $n lines"
  [ "$(refs)" = "$before" ] && ok "$1: refs unchanged" || bad "$1: refs moved"
}
# no_request PORT CERT DESC: the server behind CERT logged no request at all
no_request() { [ ! -s "$T/nginx/access-$1.log" ] && ok "$2: no request reached the server (not retried insecurely)" || bad "$2: requests: $(head -3 "$T/nginx/access-$1.log")"; }

# --- TLS -------------------------------------------------------------------------------
refused "no ca.crt (a private CA)" "TLS certificate refused: .*(not correctly signed|trusted CA)"
no_request good "no ca.crt"
cp "$T/tls/ca2.crt" "$T/creds/ca.crt"
refused "a ca.crt of another CA" "TLS certificate refused: .*(not correctly signed|trusted CA)"
no_request good "another CA"
cp "$T/tls/ca1.crt" "$T/creds/ca.crt"
refused "no credentials" "authentication failed: the server asks for credentials and .* has none"

URL="https://localhost:$P_EXP/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
refused "an expired certificate" "TLS certificate refused: .*expired"
no_request expired "an expired certificate"
URL="https://localhost:$P_NAME/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
refused "a certificate for another host name" "TLS certificate refused: .*(CN|name).*(not match|match)"
no_request wrongname "a wrong host name"
# an IP address in the URL: Debian's libgit2 (mbedTLS) matches no IP address in a
# certificate; the line says so and suggests a name
URL="https://127.0.0.1:$P_GOOD/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
refused "https:// to an IP address" "TLS certificate refused: .*cannot match an IP address in a certificate: use a host name"
# a server that accepts and never answers (the TLS handshake waits): the deadline
HPORT=$(freeport)
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' "$HPORT" </dev/null >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$HPORT"
URL="https://localhost:$HPORT/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
FETCH0=("${FETCH[@]}")
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 3)
t0=$SECONDS
refused "a TLS server that never answers" "timed out: no answer within 3 s"
[ $((SECONDS - t0)) -le 10 ] && ok "stopped by the deadline ($((SECONDS - t0)) s)" || bad "took $((SECONDS - t0)) s"
FETCH=("${FETCH0[@]}")

URL="https://no-such-host.invalid/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
refused "a host name that does not resolve" "cannot resolve host"
URL="https://localhost:$P_GOOD/config.git"; git -C "$T/mirror" remote set-url origin "$URL"

# --- tokens --------------------------------------------------------------------------
printf 'not-the-token\n' >"$T/creds/token"
refused "a wrong token" "authentication failed: the server refused the token for user x-access-token"
printf '%s\n' "$TOKEN" >"$T/creds/token"
expect_rc 0 "token as basic auth (x-access-token) with ca.crt" -- "${FETCH[@]}"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "source branch fetched" || bad "source branch not fetched"
# a redirect to another host gets no credential, though that host would take
# it: whatever mcgit prints, the other host's log must show no Authorization
# header (libgit2 without Debian's deb12u2 update hands the credential
# callback the original URL after a redirect: mcgit refuses the hop itself)
URL="http://127.0.0.1:$P_HOP/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
: >"$T/nginx/access-hop2.log"
refused "a redirect to another host" "redirect refused: the remote redirects to another host, localhost; no request and no credential went there"
expect_grep 'GET /config.git/info/refs' "$T/nginx/access-hop.log" "the first server was asked (and answered 302)"
if grep -v 'auth="-"' "$T/nginx/access-hop2.log" | grep -q .; then
  bad "a credential reached the other host: $(grep -v 'auth="-"' "$T/nginx/access-hop2.log" | head -2)"
else
  ok "the other host received no credential ($(grep -c . "$T/nginx/access-hop2.log") requests, none with Authorization)"
fi
for b in token password; do # the same with a password as with a token
  [ "$b" = password ] && { mv "$T/creds/token" "$T/token.saved"; printf 'x-access-token\n' >"$T/creds/username"; printf '%s\n' "$TOKEN" >"$T/creds/password"; }
  expect_rc 1 "a redirect to another host with a $b: refused" -- "${FETCH[@]}"
  grep -v 'auth="-"' "$T/nginx/access-hop2.log" | grep -q . && bad "$b reached the other host" || ok "$b: the other host received no credential"
done
rm "$T/creds/username" "$T/creds/password"; mv "$T/token.saved" "$T/creds/token"
# a redirect within the host is followed, with the credential
URL="http://127.0.0.1:$P_HOP3/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
expect_rc 0 "a redirect within the host (another port) is followed" -- "${FETCH[@]}"
URL="http://localhost:$P_HOP2/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
expect_rc 0 "the same server asked directly takes the token" -- "${FETCH[@]}"
grep -q 'auth="Basic ' "$T/nginx/access-hop2.log" && ok "the log shows a credential when one is sent (the check can fail)" \
  || bad "no credential logged even when asked directly: the log check cannot see one"
URL="https://localhost:$P_GOOD/config.git"; git -C "$T/mirror" remote set-url origin "$URL"
rm "$T/creds/token"
printf '%s\n' "$TOKEN" >"$T/creds/bearerToken"
scommit "$T/src" alice "second"
push
expect_rc 0 "bearerToken as Authorization: Bearer" -- "${FETCH[@]}"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "second commit fetched" || bad "second commit not fetched"
printf 'wrong-bearer\n' >"$T/creds/bearerToken"
refused "a wrong bearer token" "authentication failed"
printf '%s\n' "$TOKEN" >"$T/creds/bearerToken"

# the controller, verbose, with the token: fetches, and never shows it
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
expect_rc 0 "controller -v --repo https://... --mirror with bearerToken and ca.crt" -- \
  timeout 120 "$MCGIT" controller --once -v --repo "$URL" --mirror "$T/ctl-mirror" --trust "$T/trust" --cluster "$CL"
cp "$T/out" "$T/ctl.out"; cp "$T/err" "$T/ctl.err"
printf 'wrong-bearer\n' >"$T/creds/bearerToken"
scommit "$T/src" alice "third"
push
expect_rc 1 "controller -v with a wrong token: exit 1" -- \
  timeout 120 "$MCGIT" controller --once -v --repo "$URL" --mirror "$T/ctl-mirror" --trust "$T/trust" --cluster "$CL"
expect_grep "fetch from origin failed: https://localhost:$P_GOOD/config.git: authentication failed" "$T/err" "the controller names the remote and the cause"
if grep -rqF -e "$TOKEN" -e "$BASIC" -e wrong-bearer "$T/ctl.out" "$T/ctl.err" "$T/out" "$T/err" "$T/cl" "$T/ctl-mirror/config"; then
  bad "a token shows in output, logs, status or the mirror's config"
else
  ok "no token in output, logs (-v), pool status or the mirror's config"
fi
printf '%s\n' "$TOKEN" >"$T/creds/bearerToken"

# a branch gone from the remote: refused, though the mirror fetched it before
git -C "$T/srv/config.git" branch -q -m main gone
refused "the source branch missing on the remote" "branch missing: the remote has no branch 'main'"
git -C "$T/srv/config.git" branch -q -m gone main

# --- proxies: https_proxy and no_proxy, through tinyproxy --------------------------------
if [ -x /usr/bin/tinyproxy ]; then
  P_PROXY=$(freeport)
  cat >"$T/tinyproxy.conf" <<EOF
Port $P_PROXY
Listen 127.0.0.1
Timeout 30
MaxClients 10
Allow 127.0.0.1
ConnectPort $P_GOOD
LogLevel Connect
EOF
  /usr/bin/tinyproxy -d -c "$T/tinyproxy.conf" >"$T/tinyproxy.log" 2>&1 </dev/null &
  PIDS+=($!)
  wait_port "$P_PROXY" || bad "tinyproxy did not start"
  scommit "$T/src" alice "through the proxy"
  push
  expect_rc 0 "fetch through https_proxy (CONNECT)" -- env https_proxy="http://127.0.0.1:$P_PROXY" "${FETCH[@]}"
  [ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
    && ok "fetched through the proxy" || bad "not fetched through the proxy"
  expect_grep "CONNECT.*localhost:$P_GOOD" "$T/tinyproxy.log" "the proxy saw the CONNECT"
  DEAD=$(freeport)
  FETCH=(env https_proxy="http://127.0.0.1:$DEAD" "${FETCH[@]}")
  refused "an https_proxy that is down" "connection refused: .*\(the proxy in https_proxy or http_proxy\)"
  scommit "$T/src" alice "around the proxy"
  push
  expect_rc 0 "no_proxy=localhost bypasses the dead proxy" -- env no_proxy=localhost "${FETCH[@]}"
  [ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
    && ok "fetched around the proxy" || bad "not fetched around the proxy"
else
  skip_part "tinyproxy not found: proxies not tested"
fi
finish
