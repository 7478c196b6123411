#include "chip/chip_noc.h"

#include <algorithm>
#include <string>

#include "base/errors.h"
#include "base/tile.h"

namespace tinytpu {

ChipNoc::ChipNoc(int nodes) {
  // Add#(1, _, numNodes) and a destination of 4 bits (Add#(_, TLog#(numNodes), 4))
  if (nodes < 1 || nodes > 16)
    throw SimError("ChipNoC#(" + std::to_string(nodes) + "): 1 to 16 nodes (4-bit node numbers)");
  inbox_.resize(size_t(nodes));
}

int ChipNoc::node(int n, const char* what) const {
  if (n < 0 || n >= nodes())
    throw SimError(std::string("ChipNoC ") + what + ": node " + std::to_string(n) + " of a " +
                   std::to_string(nodes()) + "-node NoC");
  return n;
}

// truncate(pkt.dst): the node number's TLog#(numNodes) low bits
int ChipNoc::truncated(int dst) const { return dst & ((1 << index_bits(nodes())) - 1); }

bool ChipNoc::all_inboxes_not_full() const {
  return std::all_of(inbox_.begin(), inbox_.end(), [](const Fifo2<NocPacket>& f) { return f.not_full(); });
}

// bsc lifts the implicit conditions of every method a rule or method may call into its guard, whatever
// branch calls it (the reference is built without -aggressive-conditions), and an inbox chosen by a node
// number calls the method of each: send waits for the ring and every inbox to have room, recv for every
// inbox to hold a packet.
bool ChipNoc::can_send() const { return ring_.not_full() && all_inboxes_not_full(); }
bool ChipNoc::recv_ready() const {
  return std::all_of(inbox_.begin(), inbox_.end(), [](const Fifo2<NocPacket>& f) { return f.not_empty(); });
}

void ChipNoc::send(int src, const NocPacket& pkt) {
  node(src, "send");
  if (pkt.dst > 15 || pkt.src > 15) throw SimError("ChipNoC send: a node number over its 4 bits");
  if (sent_) throw SimError("ChipNoC send called twice in one cycle");
  if (!can_send())
    throw SimError("ChipNoC send while the ring or an inbox is full (its guard): the caller would wait");
  const int dst = node(truncated(pkt.dst), "send's destination");
  if (dst == src)
    inbox_[size_t(src)].enq(pkt);
  else
    ring_.enq(pkt);
  sent_ = true;
}

NocPacket ChipNoc::recv(int dst) {
  node(dst, "recv");
  if (received_) throw SimError("ChipNoC recv called twice in one cycle");
  if (!recv_ready())
    throw SimError("ChipNoC recv while an inbox is empty (its guard): the caller would wait");
  received_ = true;
  inbox_[size_t(dst)].deq();
  return inbox_[size_t(dst)].first();
}

void ChipNoc::tick() {
  // do_route: the ring's head into its destination's inbox. Its guard, lifted as send's, needs room in every
  // inbox; it and send both enqueue into the inboxes, so it gives way in a cycle send fires.
  if (ring_.not_empty() && all_inboxes_not_full() && !sent_) {
    const NocPacket& pkt = ring_.first();
    inbox_[size_t(node(truncated(pkt.dst), "a ring packet's destination"))].enq(pkt);
    ring_.deq();
  }
  ring_.tick();
  for (Fifo2<NocPacket>& f : inbox_) f.tick();
  sent_ = received_ = false;
}

}  // namespace tinytpu
