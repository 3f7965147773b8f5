# What `cmake --install` and the Debian package (scripts/package, CPack) hold: the ootci binary,
# its Python package, the docs, the systemd units and example configs. Nothing else is installed
# (no test binaries). Made for CMAKE_INSTALL_PREFIX=/usr: the units and /etc/ootci have absolute
# paths, where Debian wants them (stage elsewhere with DESTDIR).
include(GNUInstallDirs)

install(TARGETS ootci RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# <prefix>/share/ootci/python, where the binary looks first (ootci_python_dir in plan/plan_env).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ootci_torch ${PROJECT_SOURCE_DIR}/python/shims
  DESTINATION ${CMAKE_INSTALL_DATADIR}/ootci/python
  PATTERN __pycache__ EXCLUDE PATTERN *.pyc EXCLUDE)
file(GLOB doc_pages CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${doc_pages} DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's copyright file (machine-readable format) from LICENSE: in a field, every line is
# indented and a blank line is " .".
file(READ ${PROJECT_SOURCE_DIR}/LICENSE license_text)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/LICENSE)
string(STRIP "${license_text}" license_text)
string(REPLACE "\n\n" "\n.\n" license_text "${license_text}")
string(REPLACE "\n" "\n " license_text "${license_text}")
file(WRITE ${PROJECT_BINARY_DIR}/copyright
  "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
  "Upstream-Name: ootci\nSource: ${PROJECT_HOMEPAGE_URL}\n\n"
  "Files: *\nCopyright: 2026 the ootci authors\nLicense: BSD-3-Clause\n ${license_text}\n")
install(FILES ${PROJECT_BINARY_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(here ${CMAKE_CURRENT_LIST_DIR})
install(FILES ${here}/ootci-relay.service ${here}/ootci-agent.service
  DESTINATION /lib/systemd/system)
install(FILES ${here}/relay.yaml.example ${here}/agent.yaml.example DESTINATION /etc/ootci)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ootci)
set(CPACK_PACKAGE_CONTACT "ootci maintainers <maintainers@ootci.invalid>" CACHE STRING
  "The Debian package's Maintainer")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "CI for PyTorch out-of-tree accelerator backends")
# CPack puts the summary first and indents these lines as Debian's extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "The relay (ootci relay serve) receives pytorch/pytorch webhooks and dispatches them to
allowlisted backend repositories with guaranteed delivery, and serves the HUD. The backend kit
adapts upstream PyTorch tests through YAML plans, runs them robustly with evidence, judges,
selects, attributes and reports; ootci agent runs it on self-hosted machines.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # ootci_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)   # dpkg-shlibdeps adds the shared libraries' packages
# python3 runs the tests; adduser is for postinst. Torch, pytest and git are the backend's choice.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch, python3-pytest, git")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${here}/postinst ${here}/prerm ${here}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
