#!/usr/bin/env python3
"""Prints where attn_tracer goes under an install prefix, relative to it: the directory the running
python3 itself searches there, so that no PYTHONPATH is needed. Not the install (CMakeLists.txt's
install(CODE) runs this at install time, with the prefix `cmake --install --prefix` was given).

  prefix is python3's user base (~/.local)         -> its user site: lib/python3.11/site-packages
  python3 searches a lib* directory under prefix   -> that one (Debian: /usr/local ->
                                                      lib/python3.11/dist-packages, /usr -> lib/python3/dist-packages)
  any other prefix                                 -> the standard layout, lib/python3.X/site-packages
                                                      (not on python3's path: PYTHONPATH or site.addsitedir)
"""
import os
import site
import sys
import sysconfig


def under(prefix, path):
    """path relative to prefix when it is in a lib or lib64 directory of it, else None."""
    rel = os.path.relpath(os.path.realpath(path), prefix)
    first = rel.split(os.sep)[0]
    return rel if first in ("lib", "lib64") else None


def site_dir(prefix):
    prefix = os.path.realpath(prefix)
    if site.ENABLE_USER_SITE and os.path.realpath(site.getuserbase()) == prefix:
        return os.path.relpath(site.getusersitepackages(), site.getuserbase())
    for path in site.getsitepackages():
        rel = under(prefix, path)
        if rel is not None:
            return rel
    standard = sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
    return os.path.relpath(standard, prefix)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python_site_dir.py PREFIX")
    print(site_dir(sys.argv[1]))
