/* Test-only shared library without plexus entry points. */
int plexus_test_not_a_plugin(int x) { return x + 1; }
