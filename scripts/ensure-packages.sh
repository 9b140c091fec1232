#!/usr/bin/env bash
# Installs the Debian packages Queue needs when they are missing: ensure-packages.sh mariadb [chromium] [wrk] [haproxy]
set -euo pipefail
need=()
for what in "$@"; do
  case "$what" in
    mariadb)  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server) ;;
    chromium) command -v chromium >/dev/null 2>&1 || need+=(chromium) ;;
    wrk)      command -v wrk >/dev/null 2>&1 || need+=(wrk) ;;
    haproxy)  command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy) ;;
  esac
done
[ ${#need[@]} -eq 0 ] && exit 0
echo "Installing missing Debian packages: ${need[*]} (apt-get, non-interactive)..." >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
echo "Installed: ${need[*]}" >&2
