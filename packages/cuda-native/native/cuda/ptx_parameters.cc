// See ptx_parameters.h.
#include "ptx_parameters.h"

#include <cctype>
#include <sstream>
#include <vector>

namespace nuvec {

namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// The class of one `.param ...` declaration.
char ClassOfDeclaration(const std::string& declaration) {
  if (declaration.find('[') != std::string::npos) return '?';  // an aggregate: .b8 name[N]
  std::istringstream tokens(declaration);
  std::string token;
  while (tokens >> token) {
    if (token == ".param" || token == ".ptr" || token == ".global" || token == ".const" || token == ".shared" ||
        token == ".local") {
      continue;
    }
    if (token == ".align") {
      tokens >> token;  // its number
      continue;
    }
    if (token.size() < 3 || token[0] != '.') return '?';
    char letter = token[1];
    std::string bits = token.substr(2);
    if (letter == 'f' && bits == "32") return 'f';
    if (letter == 'f' && bits == "64") return 'd';
    if ((letter == 'u' || letter == 's' || letter == 'b') && bits == "32") return 'i';
    if ((letter == 'u' || letter == 's' || letter == 'b') && bits == "64") return 'l';
    return '?';
  }
  return '?';
}

}  // namespace

std::map<std::string, PtxParameterClasses> ParsePtxEntries(const std::string& ptx) {
  std::map<std::string, PtxParameterClasses> entries;
  size_t at = 0;
  while ((at = ptx.find(".entry", at)) != std::string::npos) {
    at += 6;
    if (at >= ptx.size() || !IsSpace(ptx[at])) continue;
    size_t start = at;
    while (start < ptx.size() && IsSpace(ptx[start])) start += 1;
    size_t end = start;
    while (end < ptx.size() && !IsSpace(ptx[end]) && ptx[end] != '(' && ptx[end] != '{') end += 1;
    if (end == start) continue;
    std::string name = ptx.substr(start, end - start);
    size_t open = end;
    while (open < ptx.size() && IsSpace(ptx[open])) open += 1;
    PtxParameterClasses classes;
    if (open < ptx.size() && ptx[open] == '(') {
      size_t close = ptx.find(')', open);
      if (close == std::string::npos) break;
      std::string list = ptx.substr(open + 1, close - open - 1);
      std::istringstream declarations(list);
      std::string declaration;
      while (std::getline(declarations, declaration, ',')) {
        if (declaration.find(".param") == std::string::npos) continue;
        classes.push_back(ClassOfDeclaration(declaration));
      }
      at = close;
    }
    entries[name] = classes;
  }
  return entries;
}

char PtxClassOf(ParameterKind kind) {
  switch (kind) {
    case ParameterKind::kF32:
      return 'f';
    case ParameterKind::kF64:
      return 'd';
    case ParameterKind::kI32:
    case ParameterKind::kU32:
      return 'i';
    default:
      return 'l';
  }
}

}  // namespace nuvec
