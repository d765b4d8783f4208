# Sourced by install.sh and .ci/run: how llama-cpp-python's llama.cpp is built here, and a
# rebuild when the installed build crashes on this CPU.
#
# llama-cpp-python compiles llama.cpp for the CPU it is built on (-march=native). Some virtual
# machines report AMX (amx_tile in /proc/cpuinfo) yet fault on its first instruction: every
# generation dies with a segmentation fault in ggml_backend_amx_mul_mat. On such CPUs build
# without AMX (GCC's -mno-* flags win over -march=native whatever their order); elsewhere
# nothing changes.
if [[ $(uname -m) == x86_64 ]] && grep -qw amx_tile /proc/cpuinfo 2>/dev/null \
    && echo | "${CC:-cc}" -mno-amx-tile -E - >/dev/null 2>&1; then
  export CFLAGS="${CFLAGS:-} -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  export CXXFLAGS="${CXXFLAGS:-} -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi

# llama_check_or_rebuild PYTHON [REQUIREMENTS-FILE]: run the one-token smoke test in a child
# process; when it crashes (a wheel pip cached from a build with other flags), rebuild
# llama-cpp-python without the cache (the requirements file pins it with its hash, else the
# installed version is rebuilt) and test again.
llama_check_or_rebuild() {
  local py=$1 lock=${2:-} here
  here=$(dirname "${BASH_SOURCE[0]}")
  "$py" "$here/llama_smoke.py" && return 0
  echo "llama.cpp crashed on this CPU: rebuilding llama-cpp-python without the wheel cache"
  if [[ -n $lock ]]; then
    local req
    req=$(mktemp)
    awk '/^llama-cpp-python==/{p=1} p&&!/^ /&&!/^llama-cpp-python==/{p=0} p' "$lock" >"$req"
    "$py" -m pip install -q --no-cache-dir --force-reinstall --no-deps --require-hashes -r "$req"
    rm -f "$req"
  else
    local version
    version=$("$py" -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))")
    "$py" -m pip install -q --no-cache-dir --force-reinstall --no-deps \
      "llama-cpp-python==$version"
  fi
  "$py" "$here/llama_smoke.py"
}
