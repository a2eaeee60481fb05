package io.orbite.engine.slicing

import io.orbite.engine.PropertySupport
import io.orbite.engine.slicing.SlicingGens._
import org.scalacheck.Gen
import org.scalatest.flatspec.AnyFlatSpec

/**
 * Lane choice: score = (charged + slice bytes) / bandwidth. A single slice takes the lowest score
 * (ties to the first lane from the rotation start); a multi-slice task gives each lane
 * floor(weight / total * count) slices, leftovers to the best lane, in one contiguous run per
 * lane, runs in rotation order. A masked task (a rule's laneMask) is scored among the lanes its mask
 * names only.
 */
class LaneSelectorSpec extends AnyFlatSpec with PropertySupport {
  import LaneSelectorSpec._

  override protected def cases: Int = 500

  private def genLanesOf(n: Int): Gen[Lanes] = for {
    charged <- Gen.frequency(
      1 -> Gen.const(Array.fill(n)(0L)),
      1 -> Gen.chooseNum(0L, 1L << 30).map(c => Array.fill(n)(c)),
      4 -> Gen.listOfN(n, Gen.frequency(1 -> Gen.const(0L), 3 -> Gen.chooseNum(0L, 1L << 40))).map(_.toArray))
    bandwidth <- Gen.frequency(
      1 -> Gen.choose(1e6, 1e11).map(b => Array.fill(n)(b)),
      2 -> Gen.listOfN(n, Gen.oneOf(1e9, 2e9, 12.5e9, 25e9)).map(_.toArray), // ties are likely
      3 -> Gen.listOfN(n, Gen.choose(1e6, 1e11)).map(_.toArray))
    rotation <- Gen.frequency(3 -> Gen.choose(0, 200), 1 -> Gen.choose(-1000000000, 1000000000))
  } yield Lanes(charged, bandwidth, rotation)

  private val genLaneCount: Gen[Int] = Gen.frequency(1 -> Gen.const(1), 1 -> Gen.const(64), 6 -> Gen.choose(1, 64))

  private val genCase: Gen[(SlicePlan, Lanes)] = for {
    plan <- genPlan
    n <- genLaneCount
    lanes <- genLanesOf(n)
  } yield (plan, lanes)

  /** Cases that take the share path: several slices over several lanes. */
  private val genSharedCase: Gen[(SlicePlan, Lanes)] = for {
    plan <- genPlan.retryUntil(_.count() > 1)
    n <- Gen.choose(2, 64)
    lanes <- genLanesOf(n)
  } yield (plan, lanes)

  private def assign(plan: SlicePlan, l: Lanes): IndexedSeq[Int] =
    LaneSelector.assign(plan, l.charged, l.bandwidth, l.rotation).toIndexedSeq

  /** The lowest-scoring lane for `bytes`, the first one from the rotation start on a tie. */
  private def best(l: Lanes, bytes: Long): Int = {
    val min = (0 until l.count).map(l.score(_, bytes)).min
    l.inRotation.find(l.score(_, bytes) == min).get
  }

  "LaneSelector" should "give every slice a lane in [0, lanes)" in {
    forAll(genCase) { case (plan, l) =>
      val lanes = assign(plan, l)
      lanes should have size plan.count().toLong
      all(lanes) should (be >= 0 and be < l.count)
    }
  }

  it should "give each lane at most one contiguous run, the runs in rotation order" in {
    forAll(genCase) { case (plan, l) =>
      val rs = runs(assign(plan, l)).map(_._1)
      withClue(s"runs $rs: ")(rs.distinct shouldBe rs)
      val rank = l.inRotation.zipWithIndex.toMap
      rs.map(rank) shouldBe sorted
    }
  }

  it should "send a single-slice plan to a lowest-score lane, the first from the rotation start on a tie" in {
    val gen = for {
      length <- Gen.oneOf(Gen.chooseNum(1L, MaxLength), Gen.chooseNum(1L, 1L << 20))
      n <- genLaneCount
      lanes <- genLanesOf(n)
    } yield (new SlicePlan(length, length, 1), lanes)
    forAll(gen) { case (plan, l) =>
      val Seq(lane) = assign(plan, l)
      val min = (0 until l.count).map(l.score(_, plan.length(0))).min
      l.score(lane, plan.length(0)) shouldBe min
      lane shouldBe best(l, plan.length(0))
    }
  }

  it should "choose for a lone slice with single() the lane assign() gives a one-slice plan" in {
    val gen = for {
      length <- Gen.oneOf(Gen.chooseNum(1L, MaxLength), Gen.chooseNum(1L, 1L << 20))
      n <- genLaneCount
      lanes <- genLanesOf(n)
    } yield (length, lanes)
    forAll(gen) { case (length, l) =>
      val Seq(lane) = assign(new SlicePlan(length, length, 1), l)
      LaneSelector.single(l.charged, l.bandwidth, length, l.rotation) shouldBe lane
    }
  }

  it should "put every slice on the best lane when there is only one slice or one lane" in {
    val gen = Gen.oneOf(
      for (plan <- genPlan; lanes <- genLanesOf(1)) yield (plan, lanes),
      for (plan <- genPlan.retryUntil(_.count() == 1); n <- genLaneCount; lanes <- genLanesOf(n)) yield (plan, lanes))
    forAll(gen) { case (plan, l) =>
      all(assign(plan, l)) shouldBe best(l, plan.length(0))
    }
  }

  it should "give a lane with a better score at least as many slices, and the best lane no fewer than any" in {
    forAll(genSharedCase) { case (plan, l) =>
      locally {
        val lanes = assign(plan, l)
        val share = (0 until l.count).map(lane => lanes.count(_ == lane))
        val block = plan.blockBytes()
        val top = best(l, block)
        for (lane <- 0 until l.count) share(top) should be >= share(lane)
        for (a <- 0 until l.count; b <- 0 until l.count if a != top && b != top) {
          val (sa, sb) = (l.score(a, block), l.score(b, block))
          if (sa < sb) withClue(s"lanes $a (score $sa) and $b (score $sb): ")(share(a) should be >= share(b))
          if (sa == sb) withClue(s"lanes $a and $b tie at $sa: ")(share(a) shouldBe share(b))
        }
      }
    }
  }

  it should "give every lane but the best its proportional share, rounded down" in {
    forAll(genSharedCase) { case (plan, l) =>
      locally {
        val lanes = assign(plan, l)
        val block = plan.blockBytes()
        val weight = (0 until l.count).map(lane => 1.0 / (l.score(lane, block) + 1e-12))
        val total = weight.sum
        val top = best(l, block)
        for (lane <- 0 until l.count if lane != top) {
          val ideal = weight(lane) / total * plan.count()
          val share = lanes.count(_ == lane)
          withClue(s"lane $lane, ideal share $ideal: ") {
            share.toDouble should be <= ideal + 1e-6
            share.toDouble should be > ideal - 1 - 1e-6
          }
        }
      }
    }
  }

  it should "split evenly between equal, uncharged lanes: floor shares, the remainder to the rotation start" in {
    val gen = for {
      plan <- genPlan.retryUntil(_.count() > 1)
      n <- Gen.choose(2, 64)
      bandwidth <- Gen.oneOf(Gen.choose(1e6, 1e11), Gen.oneOf(1.0, 1e9, 12.5e9))
      rotation <- Gen.choose(-1000, 1000)
    } yield (plan, Lanes(Array.fill(n)(0L), Array.fill(n)(bandwidth), rotation))
    forAll(gen) { case (plan, l) =>
      locally {
        val lanes = assign(plan, l)
        val share = (0 until l.count).map(lane => lanes.count(_ == lane))
        val q = plan.count() / l.count
        val others = share.indices.filter(_ != l.start).map(share)
        // All other lanes compute the same weight, so they get the same share: q, or q - 1 when
        // floating point rounds w / total * count just below an exact integer (count % lanes == 0).
        withClue(s"shares $share, start ${l.start}: ") {
          others.distinct should have size 1
          val s = others.head
          if (plan.count() % l.count == 0) s should (be(q) or be(q - 1)) else s shouldBe q
          share(l.start) shouldBe plan.count() - (l.count - 1) * s
          (share.max - share.min) should be <= l.count
          lanes.head shouldBe l.start
        }
      }
    }
  }

  // Regression: floating point once rounded w / total * count just below count / lanes, so that
  // e.g. 5 equal lanes and 5 slices put every slice on one lane.
  it should "split equal, uncharged lanes so that shares differ by at most count % lanes" in {
    val gen = for {
      plan <- genPlan
      n <- Gen.choose(2, 64)
      rotation <- Gen.choose(-1000, 1000)
    } yield (plan, Lanes(Array.fill(n)(0L), Array.fill(n)(1.0), rotation))
    forAll(gen) { case (plan, l) =>
      val lanes = assign(plan, l)
      val share = (0 until l.count).map(lane => lanes.count(_ == lane))
      (share.max - share.min) should be <= plan.count() % l.count
    }
  }

  it should "depend on the rotation only modulo the lane count" in {
    forAll(genCase, Gen.choose(-3, 3)) { case ((plan, l), turns) =>
      val turned = l.copy(rotation = l.rotation + turns * l.count)
      assign(plan, turned) shouldBe assign(plan, l)
    }
  }

  /** A case and a mask naming at least one of its lanes, maybe bits beyond them too. */
  private val genMaskedCase: Gen[(SlicePlan, Lanes, Long)] = for {
    (plan, l) <- genCase
    named <- Gen.choose(0, l.count - 1)
    bits <- Gen.frequency(2 -> Gen.const(0L), 3 -> Gen.chooseNum(Long.MinValue, Long.MaxValue))
  } yield (plan, l, bits | (1L << named))

  private def masked(mask: Long, lane: Int): Boolean = (mask >>> lane & 1L) != 0

  it should "give every slice of a masked task a lane the mask names (a rule's laneMask)" in {
    forAll(genMaskedCase) { case (plan, l, mask) =>
      val lanes = LaneSelector.assign(plan, l.charged, l.bandwidth, l.rotation, mask).toIndexedSeq
      lanes should have size plan.count().toLong
      all(lanes.map(masked(mask, _))) shouldBe true
      val rs = runs(lanes).map(_._1)
      withClue(s"runs $rs: ")(rs.distinct shouldBe rs)
    }
  }

  it should "choose as without a mask when the mask names every lane" in {
    forAll(genCase) { case (plan, l) =>
      LaneSelector.assign(plan, l.charged, l.bandwidth, l.rotation, LaneSelector.all(l.count)).toIndexedSeq shouldBe assign(plan, l)
      LaneSelector.assign(plan, l.charged, l.bandwidth, l.rotation, -1L).toIndexedSeq shouldBe assign(plan, l)
    }
  }

  it should "send a masked lone slice to the lowest-score named lane, the first from the rotation start on a tie" in {
    forAll(genMaskedCase) { case (plan, l, mask) =>
      val bytes = plan.length(0)
      val lane = LaneSelector.single(l.charged, l.bandwidth, bytes, l.rotation, mask)
      val named = l.inRotation.filter(masked(mask, _))
      val min = named.map(l.score(_, bytes)).min
      lane shouldBe named.find(l.score(_, bytes) == min).get
      val Seq(same) = LaneSelector.assign(new SlicePlan(bytes, bytes, 1), l.charged, l.bandwidth, l.rotation, mask).toIndexedSeq
      same shouldBe lane
    }
  }

  it should "give the named lanes of a masked task no fewer slices than a lane with a worse score" in {
    forAll(genMaskedCase.retryUntil { case (p, l, _) => p.count() > 1 && l.count > 1 }) { case (plan, l, mask) =>
      val lanes = LaneSelector.assign(plan, l.charged, l.bandwidth, l.rotation, mask).toIndexedSeq
      val named = (0 until l.count).filter(masked(mask, _))
      val share = named.map(lane => lane -> lanes.count(_ == lane)).toMap
      val block = plan.blockBytes()
      val top = named.minBy(lane => (l.score(lane, block), l.inRotation.indexOf(lane)))
      for (lane <- named) share(top) should be >= share(lane)
    }
  }

  it should "refuse a mask that names none of the lanes" in {
    forAll(genCase) { case (plan, l) =>
      whenever(l.count < 64) {
        val beyond = -1L << l.count
        an[IllegalArgumentException] should be thrownBy LaneSelector.assign(plan, l.charged, l.bandwidth, l.rotation, beyond)
        an[IllegalArgumentException] should be thrownBy LaneSelector.single(l.charged, l.bandwidth, 1L, l.rotation, beyond)
      }
    }
  }

  it should "refuse a lane set without lanes or with a bandwidth per lane missing" in {
    forAll(genCase) { case (plan, l) =>
      an[IllegalArgumentException] should be thrownBy LaneSelector.assign(plan, Array.empty[Long], Array.empty[Double], 0)
      an[IllegalArgumentException] should be thrownBy LaneSelector.assign(plan, l.charged, l.bandwidth :+ 1.0, 0)
    }
  }
}

object LaneSelectorSpec {
  final case class Lanes(charged: Array[Long], bandwidth: Array[Double], rotation: Int) {
    def count: Int = charged.length
    def start: Int = Math.floorMod(rotation, count)
    def score(lane: Int, bytes: Long): Double = (charged(lane) + bytes).toDouble / bandwidth(lane)
    /** Lanes from the rotation start on. */
    def inRotation: IndexedSeq[Int] = (0 until count).map(k => (start + k) % count)
    override def toString: String =
      s"Lanes(charged=${charged.mkString("[", ",", "]")}, bandwidth=${bandwidth.mkString("[", ",", "]")}, rotation=$rotation)"
  }
}
