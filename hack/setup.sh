#!/usr/bin/env bash
# Installs everything berth's cluster and test suite need on a fresh Debian machine.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "berth setup: run as root (it installs Debian packages)" >&2; exit 1; }
install_apt_packages
install_tools
build_berth
