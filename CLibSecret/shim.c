// The module's one translation unit (SwiftPM compiles C targets from sources); everything is in include/shim.h.
#include "shim.h"
