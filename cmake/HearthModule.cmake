# Helpers that keep every module's build recipe the same: a static library made of the
# module's .cpp files, with src/ as the include root, linked only to the modules below it.
function(hearth_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/*/*.cpp)
  add_library(hearth_${name} STATIC ${_srcs})
  target_include_directories(hearth_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(hearth_${name} PUBLIC ${M_DEPS})
endfunction()

# One GoogleTest executable per module: tests/<module>/*.cpp.
function(hearth_module_test name)
  cmake_parse_arguments(T "" "" "DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  add_executable(test_${name} ${_srcs})
  target_link_libraries(test_${name} PRIVATE hearth_test_common ${T_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 PROPERTIES ENVIRONMENT "HEARTH_SHARED_DIR=${HEARTH_SHARED_DIR}")
endfunction()
