# install.cmake — what `cmake --install` puts in place (included by the
# top-level CMakeLists.txt):
#
#   bin/mcgit
#   share/man/man1/mcgit.1, mcgit-CMD.1   generated from `mcgit help` (gen-man.sh)
#   share/bash-completion/completions/mcgit, share/zsh/vendor-completions/_mcgit
#                                         generated from `mcgit help` (gen-completion.sh)
#   MCGIT_SYSTEMD_UNITDIR/mcgit-{controller,agent}.service   from deploy/systemd,
#                                         with this prefix's paths to mcgit and its settings
#   SYSCONFDIR/default/mcgit              deploy/systemd/mcgit.env, never overwritten
#   share/doc/mcgit/                      README.md and docs/*.md (the units link to them)
#
# The man pages and completions are made by running the built binary, so a
# new command or option is in them after the next build. DESTDIR and
# CMAKE_INSTALL_PREFIX are honoured; see docs/install.md.
include(GNUInstallDirs)

set(MCGIT_GENERATED ${CMAKE_BINARY_DIR}/generated)
set(_inst ${PROJECT_SOURCE_DIR}/deploy/install)

# Man pages and completions, on every build of mcgit. An Asan build's
# binary runs here too: no leak report at exit for this.
add_custom_command(
  OUTPUT ${MCGIT_GENERATED}/man/mcgit.1 ${MCGIT_GENERATED}/completion/mcgit
         ${MCGIT_GENERATED}/completion/_mcgit
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
          bash ${_inst}/gen-man.sh $<TARGET_FILE:mcgit> ${MCGIT_GENERATED}/man ${PROJECT_VERSION}
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
          bash ${_inst}/gen-completion.sh $<TARGET_FILE:mcgit> ${MCGIT_GENERATED}/completion
  DEPENDS mcgit ${_inst}/gen-man.sh ${_inst}/man.awk ${_inst}/gen-completion.sh
          ${_inst}/helpspec.awk
  COMMENT "Generating man pages and shell completions from mcgit help"
  VERBATIM)
add_custom_target(mcgit-man-completion ALL
  DEPENDS ${MCGIT_GENERATED}/man/mcgit.1 ${MCGIT_GENERATED}/completion/mcgit)

# Where systemd units go: with prefix /usr, systemd's own directory
# (pkg-config systemd, /lib/systemd/system on Debian 12); otherwise
# PREFIX/lib/systemd/system, which systemd also reads for /usr/local.
set(_unitdir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  pkg_get_variable(_sd_unitdir systemd systemdsystemunitdir)
  if(_sd_unitdir)
    set(_unitdir ${_sd_unitdir})
  endif()
endif()
set(MCGIT_SYSTEMD_UNITDIR ${_unitdir} CACHE PATH "where mcgit's systemd units are installed")
set(MCGIT_ZSH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
    CACHE PATH "where the zsh completion _mcgit is installed (a directory on zsh's fpath)")
set(MCGIT_BASH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
    CACHE PATH "where the bash completion mcgit is installed")

# The units name the binary, the settings file and the docs by absolute
# path: rewritten for this prefix (deploy/systemd holds them for /usr).
foreach(_unit mcgit-controller.service mcgit-agent.service)
  set(_src ${PROJECT_SOURCE_DIR}/deploy/systemd/${_unit})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_src})
  file(READ ${_src} _text)
  string(REPLACE "/usr/bin/mcgit" "${CMAKE_INSTALL_FULL_BINDIR}/mcgit" _text "${_text}")
  string(REPLACE "/etc/default/mcgit" "${CMAKE_INSTALL_FULL_SYSCONFDIR}/default/mcgit" _text "${_text}")
  string(REPLACE "/usr/share/doc/mcgit" "${CMAKE_INSTALL_FULL_DOCDIR}" _text "${_text}")
  file(CONFIGURE OUTPUT ${MCGIT_GENERATED}/systemd/${_unit} CONTENT "${_text}" @ONLY)
endforeach()

install(TARGETS mcgit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${MCGIT_GENERATED}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        FILES_MATCHING PATTERN "*.1")
install(FILES ${MCGIT_GENERATED}/completion/mcgit DESTINATION ${MCGIT_BASH_COMPLETION_DIR})
install(FILES ${MCGIT_GENERATED}/completion/_mcgit DESTINATION ${MCGIT_ZSH_COMPLETION_DIR})
install(FILES ${MCGIT_GENERATED}/systemd/mcgit-controller.service
              ${MCGIT_GENERATED}/systemd/mcgit-agent.service
        DESTINATION ${MCGIT_SYSTEMD_UNITDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB _docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The settings file: put in place once, an edited one is kept (file(INSTALL)
# adds DESTDIR itself).
set(_envdst ${CMAKE_INSTALL_FULL_SYSCONFDIR}/default/mcgit)
install(CODE "
  set(_dst \"\$ENV{DESTDIR}${_envdst}\")
  if(EXISTS \"\${_dst}\")
    message(STATUS \"Keeping: \${_dst}\")
  else()
    file(INSTALL \"${PROJECT_SOURCE_DIR}/deploy/systemd/mcgit.env\"
         DESTINATION \"${CMAKE_INSTALL_FULL_SYSCONFDIR}/default\"
         RENAME mcgit PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()")
