// GLib's include paths for the libsecret module, from glib-2.0.pc (see Package.swift).
#include <glib.h>
