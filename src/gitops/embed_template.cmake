# Generates a C file holding repo-template/ so `mcgit init` works from any
# installed binary. Included from the top-level CMakeLists.txt at configure
# time; every template file is a configure dependency.
set(_tpl_dir ${PROJECT_SOURCE_DIR}/repo-template)
file(GLOB_RECURSE _tpl_files RELATIVE ${_tpl_dir} ${_tpl_dir}/*)
list(SORT _tpl_files)
set(_out "/* generated from repo-template/ by src/gitops/embed_template.cmake */\n")
string(APPEND _out "#include \"gitops/gitops.h\"\n\n")
set(_i 0)
set(_table "")
foreach(f ${_tpl_files})
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_tpl_dir}/${f})
  file(READ ${_tpl_dir}/${f} _hex HEX)
  file(SIZE ${_tpl_dir}/${f} _size)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  string(APPEND _out "static const unsigned char tpl_${_i}[] = {${_bytes} 0};\n")
  string(APPEND _table "    {\"${f}\", tpl_${_i}, ${_size}},\n")
  math(EXPR _i "${_i} + 1")
endforeach()
string(APPEND _out "\nconst mcg_template_file mcg_template_files[] = {\n${_table}    {0, 0, 0},\n};\n")
file(WRITE ${CMAKE_BINARY_DIR}/generated/template_data.c.new "${_out}")
file(COPY_FILE ${CMAKE_BINARY_DIR}/generated/template_data.c.new
     ${CMAKE_BINARY_DIR}/generated/template_data.c ONLY_IF_DIFFERENT)
