#!/usr/bin/env bash
# tools/deps.sh PYTHON GNUPLOT - the `deps` step of `make run` / `make test` / `make deps`.
# Looks for gnuplot and for NumPy in $PYTHON; installs what is missing when it can
# (gnuplot: apt-get gnuplot-nox as root or through sudo -n; NumPy: pip, then apt-get
# python3-numpy), says in one line what it did, and prints nothing when all is present.
# Where it cannot install, it prints the exact command and the run goes on: plots and
# the NumPy check then report as skipped, never as passed.
PYTHON=${1:-python3}
GNUPLOT=${2:-gnuplot}

have_gnuplot() { command -v "$GNUPLOT" >/dev/null 2>&1; }
have_numpy()   { "$PYTHON" -c 'import numpy' >/dev/null 2>&1; }
have_gnuplot && have_numpy && exit 0

# apt-get as root, or through sudo without a password; nothing else.
if [ "$(id -u)" -eq 0 ]; then APT="apt-get"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then APT="sudo -n apt-get"
else APT=""; fi

APT_UPDATED=0
apt_install() {
    [ -n "$APT" ] && command -v apt-get >/dev/null 2>&1 || return 1
    if [ $APT_UPDATED -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive timeout 300 $APT update -qq >/dev/null 2>&1 || return 1
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive timeout 600 $APT install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}

if ! have_gnuplot; then
    if apt_install gnuplot-nox && have_gnuplot; then
        echo "deps: installed gnuplot (apt-get install gnuplot-nox)"
    else
        echo "deps: gnuplot is missing and could not be installed; plots will be skipped. To install: sudo apt-get install gnuplot-nox"
    fi
fi

if ! have_numpy; then
    if timeout 600 "$PYTHON" -m pip install -q numpy >/dev/null 2>&1 && have_numpy; then
        echo "deps: installed NumPy ($PYTHON -m pip install numpy)"
    elif apt_install python3-numpy && have_numpy; then
        echo "deps: installed NumPy (apt-get install python3-numpy)"
    else
        echo "deps: NumPy is missing for $PYTHON and could not be installed; the NumPy cross-check will be skipped. To install: $PYTHON -m pip install numpy"
    fi
fi
exit 0
