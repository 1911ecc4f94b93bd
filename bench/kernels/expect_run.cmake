cmake_minimum_required(VERSION 3.25)
# cmake -DCOMMAND=a|b|c -DEXPECT_EXIT=n -DEXPECT_REGEX=re -P expect_run.cmake
# Runs the command; fails unless it exits with EXPECT_EXIT and its output matches EXPECT_REGEX.
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT status STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "expected exit status ${EXPECT_EXIT}, got ${status}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match \"${EXPECT_REGEX}\"")
endif()
