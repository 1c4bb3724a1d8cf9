# Run by the build (cmake -P) when a file under webui/ changed: copies the web UI's sources into
# the build tree, runs `npm ci` there when package-lock.json changed (a stamp keeps its hash),
# the type check (`npm run check`: svelte-check over the .ts and .svelte files, so a type error
# fails the build), the production build (vite), and embeds the output into a C++ source
# (webui/scripts/embed.mjs).
# The source tree gets no node_modules or dist, so several build trees never race.
# Inputs: SRC (webui/), WORK (build folder), OUT (the .cpp), NPM, NODE.
foreach(v SRC WORK OUT NPM NODE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "WebUiBuild.cmake: ${v} is not set")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK})
file(REMOVE_RECURSE ${WORK}/src)
file(COPY ${SRC}/ DESTINATION ${WORK} PATTERN node_modules EXCLUDE PATTERN dist EXCLUDE)
file(SHA256 ${SRC}/package-lock.json lock_hash)
set(stamp ${WORK}/.npm-ci-stamp)
set(old_hash "")
if(EXISTS ${stamp})
  file(READ ${stamp} old_hash)
endif()
if(NOT EXISTS ${WORK}/node_modules OR NOT old_hash STREQUAL lock_hash)
  message(STATUS "webui: npm ci in ${WORK}")
  execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "webui: npm ci failed (${rc}); needs the npm registry or a filled npm cache, or configure with -DHEARTH_WEBUI=OFF")
  endif()
  file(WRITE ${stamp} "${lock_hash}")
endif()
execute_process(COMMAND ${NPM} run --silent check WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "webui: the type check (npm run check) failed (${rc}); the errors are above")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env HEARTH_WEBUI_OUT=${WORK}/dist ${NODE} node_modules/vite/bin/vite.js build --logLevel warn
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "webui: vite build failed (${rc})")
endif()
execute_process(COMMAND ${NODE} ${WORK}/scripts/embed.mjs ${WORK}/dist ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "webui: embedding the build failed (${rc})")
endif()
