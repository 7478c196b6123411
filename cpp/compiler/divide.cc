#include "compiler/divide.h"

#include <algorithm>
#include <map>

namespace tinytpu::compiler {

namespace {

struct DivisorHalf {
  const Node* division = nullptr;                // the first FDIV by it: the dtype the half takes
  int scale = -1, scaled = -1, reciprocal = -1;  // its nodes in the split kernel
};

}  // namespace

Kernel split_divisions(const Kernel& k) {
  if (k.fast_math) return k;  // FDIV is FRECIP and FMUL there
  // Worth splitting where the divisor's half is computed fewer times than the divisions: a divisor read by
  // several of them, or computed outside a loop they are in. Otherwise it would only add tile nodes.
  std::vector<int> innermost(k.nodes.size(), -1);  // per node: the innermost loop (RANGE) it is in
  std::vector<int> open;
  std::map<int, std::vector<int>> by_divisor;  // divisor node -> the FDIVs by it
  for (int i = 0; i < int(k.nodes.size()); ++i) {
    const Node& n = k.nodes[i];
    if (n.op == Op::END) open.erase(std::remove(open.begin(), open.end(), n.src.at(1)), open.end());
    innermost[i] = open.empty() ? -1 : open.back();
    if (n.op == Op::RANGE) open.push_back(i);
    if (n.op == Op::FDIV) by_divisor[n.src.at(1)].push_back(i);
  }
  std::map<int, DivisorHalf> divisors;  // divisor node of `k` -> its half, made right after it
  for (const auto& [divisor, divisions] : by_divisor)
    if (divisions.size() > 1 || innermost[divisions[0]] > divisor)
      divisors[divisor].division = &k.nodes[divisions[0]];
  if (divisors.empty()) return k;
  Kernel out{k.name, k.fast_math, {}};
  out.nodes.reserve(k.nodes.size() + 4 * divisors.size());
  std::vector<int> at(k.nodes.size(), -1);  // node of `k` -> node of `out`
  auto add = [&](Op op, const Node& like, std::vector<int> src) {
    out.nodes.push_back(Node{op, like.dtype, like.dtype_text, std::move(src)});
    return int(out.nodes.size()) - 1;
  };
  for (int i = 0; i < int(k.nodes.size()); ++i) {
    const Node& n = k.nodes[i];
    if (auto h_it = divisors.find(n.op == Op::FDIV ? n.src[1] : -1); h_it != divisors.end()) {
      const DivisorHalf& h = h_it->second;
      const int scaled_dividend = add(Op::MUL, n, {at[n.src[0]], h.scale});
      at[i] = add(Op::DIV_EXACT, n, {scaled_dividend, h.scaled, h.reciprocal});
    } else {
      at[i] = int(out.nodes.size());
      out.nodes.push_back(n);
      for (int& s : out.nodes.back().src) s = at[s];
    }
    if (auto d = divisors.find(i); d != divisors.end()) {  // a quotient may be a divisor too
      DivisorHalf& h = d->second;
      h.scale = add(Op::DIV_SCALE, *h.division, {at[i]});
      h.scaled = add(Op::MUL, *h.division, {at[i], h.scale});
      h.reciprocal = add(Op::RECIPROCAL, *h.division, {h.scaled});
    }
  }
  return out;
}

}  // namespace tinytpu::compiler
