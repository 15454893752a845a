# common/tests.sh - tests of the shared library (sourced by tools/run_tests.sh)
t_units "$BUILD/test_common"
