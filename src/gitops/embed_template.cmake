# Generates C files holding repo-template/ and hooks/ so `mcgit init` and
# `mcgit hook install` work from any installed binary. Included from the
# top-level CMakeLists.txt at configure time; every embedded file is a
# configure dependency.
function(mcg_embed dir symbol outfile)
  file(GLOB_RECURSE files RELATIVE ${dir} ${dir}/*)
  list(SORT files)
  set(out "/* generated from ${symbol} sources by src/gitops/embed_template.cmake */\n")
  string(APPEND out "#include \"gitops/gitops.h\"\n\n")
  set(i 0)
  set(table "")
  foreach(f ${files})
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${dir}/${f})
    file(READ ${dir}/${f} hex HEX)
    file(SIZE ${dir}/${f} size)
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
    string(APPEND out "static const unsigned char f_${i}[] = {${bytes} 0};\n")
    string(APPEND table "    {\"${f}\", f_${i}, ${size}},\n")
    math(EXPR i "${i} + 1")
  endforeach()
  string(APPEND out "\nconst mcg_template_file ${symbol}[] = {\n${table}    {0, 0, 0},\n};\n")
  file(WRITE ${outfile}.new "${out}")
  file(COPY_FILE ${outfile}.new ${outfile} ONLY_IF_DIFFERENT)
endfunction()

mcg_embed(${PROJECT_SOURCE_DIR}/repo-template mcg_template_files
          ${CMAKE_BINARY_DIR}/generated/template_data.c)
mcg_embed(${PROJECT_SOURCE_DIR}/hooks mcg_hook_files ${CMAKE_BINARY_DIR}/generated/hook_data.c)
