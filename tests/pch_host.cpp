// Compiles nothing of its own: the target around it builds the precompiled header that every
// test reuses (tests/CMakeLists.txt, mb_test_pch).
