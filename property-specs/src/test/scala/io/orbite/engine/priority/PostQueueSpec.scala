package io.orbite.engine.priority

import io.orbite.engine.{Priority, PropertySupport}
import java.time.Duration
import org.scalacheck.Gen
import org.scalatest.flatspec.AnyFlatSpec

/**
 * The post queue (C14) under any interleaving of offers, polls, aging passes and time, in both
 * promotion modes, against a plain model: every entry is posted exactly once; each poll takes the
 * oldest entry of the highest tier holding any; an entry only ever moves up, one tier per pass and
 * only in a pass at least 1 ms after the last; a tier moves only when its oldest entry waited the
 * timeout (per entry: only the entries that did).
 */
class PostQueueSpec extends AnyFlatSpec with PropertySupport {
  override protected def cases: Int = 400

  private sealed trait Op
  private case class Offer(tier: Int) extends Op
  private case object Poll extends Op
  private case object Promote extends Op
  private case class Advance(micros: Long) extends Op

  private val genOp: Gen[Op] = Gen.frequency(
    6 -> Gen.choose(0, 2).map(Offer.apply),
    3 -> Gen.const(Poll),
    3 -> Gen.const(Promote),
    4 -> Gen.choose(1L, 6000L).map(Advance.apply))

  private val genCase = for {
    n <- Gen.choose(10, 400)
    ops <- Gen.listOfN(n, genOp)
    perEntry <- Gen.oneOf(false, true)
    timeoutMs <- Gen.oneOf(1L, 3L, 10L)
  } yield (ops, perEntry, timeoutMs)

  private final case class M(id: Int, at: Long, var tier: Int)

  "the post queue" should "post each entry once, the oldest of the highest tier first, aging only upward" in {
    forAll(genCase) { case (ops, perEntry, timeoutMs) =>
      val timeout = timeoutMs * 1000000L
      val q = new PostQueue[Integer](Duration.ofMillis(timeoutMs), perEntry)
      var now = 0L
      var lastPass = Long.MinValue
      var nextId = 0
      val model = scala.collection.mutable.ArrayBuffer.empty[M]
      val posted = scala.collection.mutable.Set.empty[Int]
      val priorities = Priority.values()
      for (op <- ops) {
        op match {
          case Offer(t) =>
            q.offer(Integer.valueOf(nextId), priorities(t), now)
            model += M(nextId, now, t)
            nextId += 1
          case Poll =>
            val got = Option(q.poll()).map(_.intValue)
            if (model.isEmpty) got shouldBe None
            else {
              val top = model.map(_.tier).min
              val expected = model.filter(_.tier == top).minBy(m => (m.at, m.id))
              got shouldBe Some(expected.id)
              posted.add(expected.id) shouldBe true
              model -= expected
            }
          case Promote =>
            q.promote(now)
            if (lastPass == Long.MinValue || now - lastPass >= 1000000L) {
              lastPass = now
              for (from <- Seq(1, 2)) {
                val tier = model.filter(_.tier == from)
                if (tier.nonEmpty && now - tier.map(_.at).min >= timeout) {
                  tier.filter(m => !perEntry || now - m.at >= timeout).foreach(_.tier = from - 1)
                }
              }
            }
          case Advance(us) => now += us * 1000L
        }
        for (t <- 0 to 2) q.size(priorities(t)) shouldBe model.count(_.tier == t)
      }
      var left = Option(q.poll())
      while (left.isDefined) {
        posted.add(left.get.intValue) shouldBe true
        left = Option(q.poll())
      }
      posted.size shouldBe nextId
    }
  }

  private case class Sweep(modulus: Int, rest: Int) extends Op

  private val genSweepCase = for {
    n <- Gen.choose(10, 400)
    ops <- Gen.listOfN(
      n,
      Gen.frequency(
        12 -> genOp,
        1 -> (for {
          k <- Gen.choose(1, 5)
          r <- Gen.choose(0, 4)
        } yield Sweep(k, r % k))))
    perEntry <- Gen.oneOf(false, true)
    timeoutMs <- Gen.oneOf(1L, 3L, 10L)
  } yield (ops, perEntry, timeoutMs)

  it should "hand out exactly the order of a sorted model through polls, sweeps and the final drain" in {
    forAll(genSweepCase) { case (ops, perEntry, timeoutMs) =>
      val timeout = timeoutMs * 1000000L
      val q = new PostQueue[Integer](Duration.ofMillis(timeoutMs), perEntry)
      var now = 0L
      var lastPass = Long.MinValue
      var nextId = 0
      val model = scala.collection.mutable.ArrayBuffer.empty[M]
      val priorities = Priority.values()
      // The reference: by tier, then enqueue time, then offer order.
      def ordered = model.sortBy(m => (m.tier, m.at, m.id)).toList
      for (op <- ops) {
        op match {
          case Offer(t) =>
            q.offer(Integer.valueOf(nextId), priorities(t), now)
            model += M(nextId, now, t)
            nextId += 1
          case Poll =>
            val got = Option(q.poll()).map(_.intValue)
            got shouldBe ordered.headOption.map(_.id)
            ordered.headOption.foreach(model -= _)
          case Promote =>
            q.promote(now)
            if (lastPass == Long.MinValue || now - lastPass >= 1000000L) {
              lastPass = now
              for (from <- Seq(1, 2)) {
                val tier = model.filter(_.tier == from)
                if (tier.nonEmpty && now - tier.map(_.at).min >= timeout) {
                  tier.filter(m => !perEntry || now - m.at >= timeout).foreach(_.tier = from - 1)
                }
              }
            }
          case Sweep(k, r) =>
            val removed = scala.collection.mutable.ArrayBuffer.empty[Int]
            val n = q.removeIf(i => i.intValue % k == r, i => removed += i.intValue)
            val expected = ordered.filter(_.id % k == r)
            removed.toList shouldBe expected.map(_.id)
            n shouldBe expected.size
            model --= expected
          case Advance(us) => now += us * 1000L
        }
        q.isEmpty shouldBe model.isEmpty
        for (t <- 0 to 2) q.size(priorities(t)) shouldBe model.count(_.tier == t)
      }
      val drained = scala.collection.mutable.ArrayBuffer.empty[Int]
      q.drainTo(i => drained += i.intValue) shouldBe model.size
      drained.toList shouldBe ordered.map(_.id)
      q.isEmpty shouldBe true
      q.poll() shouldBe null
    }
  }
}
