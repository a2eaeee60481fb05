package io.orbite.engine

import org.scalacheck.Shrink
import org.scalactic.anyvals.PosInt
import org.scalatest.matchers.should.Matchers
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * Defaults shared by the property specs: a fixed number of successful cases per property, and no
 * shrinking. The generators here build values under constraints (consistent headers, valid
 * plans, lane arrays that fit the plan); ScalaCheck's default shrinkers would break those
 * constraints and report a misleading "minimal" counterexample, so a failure is reported exactly
 * as generated.
 */
trait PropertySupport extends ScalaCheckPropertyChecks with Matchers {
  /** Successful cases each property needs; specs override it for cheap or expensive properties. */
  protected def cases: Int = 500

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = PosInt.from(cases).get, maxDiscardedFactor = 2.0)

  implicit def noShrink[T]: Shrink[T] = Shrink.shrinkAny
}
