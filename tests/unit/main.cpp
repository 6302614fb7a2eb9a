// Catch2's main for the unit tests (the tests include the library, never the CLI).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
