#include "chip/chip_noc.h"

#include <string>

#include "base/config.h"
#include "base/errors.h"

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

// truncate(pkt.dst): the node number's TLog#(numNodes) low bits (a node past the last is an error: the
// reference would index past its inboxes)
int ChipNoc::destination(const NocPacket& pkt, const char* what) const {
  return node(pkt.dst & ((1 << index_bits(nodes())) - 1), what);
}

bool ChipNoc::can_send(int src, const NocPacket& pkt) const {
  return destination(pkt, "send's destination") == node(src, "send") || ring_.not_full();
}

void ChipNoc::send(int src, const NocPacket& pkt) {
  if (pkt.dst > 15 || pkt.src > 15) throw SimError("ChipNoC send: a node number over its 4 bits");
  if (sent_) throw SimError("ChipNoC send called twice in one cycle");
  if (!can_send(src, pkt))
    throw SimError("ChipNoC send while the ring is full (its guard): the caller would wait");
  if (destination(pkt, "send's destination") == src) {
    looped_ = true;
    if (inbox_[size_t(src)].not_full())
      inbox_[size_t(src)].enq(pkt);
    else
      ++dropped_;
  } else {
    ring_.enq(pkt);
  }
  sent_ = true;
}

NocPacket ChipNoc::recv(int dst) {
  if (received_) throw SimError("ChipNoC recv called twice in one cycle");
  if (!can_recv(dst)) throw SimError("ChipNoC recv from an empty inbox (its guard): the caller would wait");
  received_ = true;
  inbox_[size_t(dst)].deq();
  return inbox_[size_t(dst)].first();
}

void ChipNoc::tick() {
  // do_route: the ring's head into its destination's inbox, or dropped if that is full
  if (ring_.not_empty() && !looped_) {
    const NocPacket& pkt = ring_.first();
    Fifo2<NocPacket>& inbox = inbox_[size_t(destination(pkt, "a ring packet's destination"))];
    if (inbox.not_full())
      inbox.enq(pkt);
    else
      ++dropped_;
    ring_.deq();
  }
  ring_.tick();
  for (Fifo2<NocPacket>& f : inbox_) f.tick();
  sent_ = looped_ = received_ = false;
}

}  // namespace tinytpu
