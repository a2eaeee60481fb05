package io.orbite.engine

import io.orbite.engine.wire.{FrameCodec, FrameRejectedException}
import java.util.concurrent.{CompletionException, ExecutionException}
import org.scalacheck.Gen
import org.scalatest.propspec.AnyPropSpec

/**
 * Every `TransferException` message starts with its kind exactly once, however its detail was
 * built: from plain text, from another TransferException's message (any kind), or from a failure
 * wrapped in CompletionException / ExecutionException. And the foreign-protocol sentence names
 * the protocols it can recognise from a peer's first four bytes.
 */
class ErrorMessageSpec extends AnyPropSpec with PropertySupport {
  private val Kinds: Seq[ErrorKind] = ErrorKind.values().toSeq

  private val genKind: Gen[ErrorKind] = Gen.oneOf(Kinds)
  private val genText: Gen[String] = Gen.frequency(
    5 -> Gen.alphaNumStr,
    2 -> Gen.asciiPrintableStr,
    1 -> Gen.const(""),
    // Text that only looks like a prefix must survive: no colon, or a lower-case kind.
    1 -> Gen.oneOf("UNAVAILABLE", "TIMEOUT without colon", "unavailable: lower case", "UNAVAILABLEX: not a kind"))
  /** Zero to three kind prefixes, as repeated wrapping would leave them. */
  private val genPrefixes: Gen[List[ErrorKind]] = Gen.choose(0, 3).flatMap(n => Gen.listOfN(n, genKind))

  private def startsWithAKind(s: String): Boolean = Kinds.exists(k => s.startsWith(k.name() + ": "))

  property("a message starts with its kind once, whatever prefixes its detail carried") {
    forAll(genKind, genPrefixes, genText) { (kind, prefixes, text) =>
      val detail = prefixes.map(_.name() + ": ").mkString + text
      val e = new TransferException(kind, detail)
      e.getMessage should startWith(kind.name() + ": ")
      startsWithAKind(e.getMessage.substring(kind.name().length + 2)) shouldBe false
      e.detail() shouldBe e.getMessage.substring(kind.name().length + 2)
      if (!startsWithAKind(text)) e.detail() shouldBe text
    }
  }

  property("a message built from another failure's message has one kind prefix") {
    forAll(genKind, genKind, genText, Gen.choose(0, 2)) { (outer, inner, text, wrapping) =>
      val cause = new TransferException(inner, text)
      val wrapped: Throwable = wrapping match {
        case 0 => cause
        case 1 => new CompletionException(cause)
        case _ => new ExecutionException(new CompletionException(cause))
      }
      for (message <- Seq(TransferException.describe(wrapped), cause.getMessage)) {
        val e = new TransferException(outer, message)
        e.getMessage should startWith(outer.name() + ": ")
        startsWithAKind(e.getMessage.substring(outer.name().length + 2)) shouldBe false
      }
      TransferException.describe(wrapped) shouldBe cause.detail()
    }
  }

  property("describe gives a message, or the class name when there is none, never a wrapper's") {
    forAll(Gen.alphaNumStr) { text =>
      TransferException.describe(new CompletionException(new java.io.IOException(text))) shouldBe
        (if (text.isBlank) "IOException" else text)
    }
  }

  property("the first four bytes of HTTP, HTTP/2, TLS records and SSH are named; others are not") {
    val table = Seq(
      "HTTP" -> Some("HTTP"),
      "PRI " -> Some("HTTP/2"),
      "SSH-" -> Some("SSH"),
      "\u0015\u0003\u0003\u0000" -> Some("TLS"), // an alert record, TLS 1.2
      "\u0016\u0003\u0001\u0002" -> Some("TLS"), // a handshake record
      "\u0017\u0003\u0003\u0040" -> Some("TLS"), // application data
      "\u0016\u0002\u0000\u0000" -> None, // not version 3
      "GET " -> None,
      "ORBX" -> None)
    for ((bytes, protocol) <- table) {
      val magic = bytes.map(_.toInt & 0xff).foldLeft(0)((acc, b) => (acc << 8) | b)
      val sentence = FrameCodec.foreignProtocol(magic)
      protocol match {
        case Some(name) => sentence shouldBe s"the peer speaks $name, not the OrbiTE protocol (is this the right port?): "
        case None => sentence shouldBe "not the OrbiTE protocol: "
      }
      val rejected = intercept[FrameRejectedException] {
        val buf = java.nio.ByteBuffer.allocate(FrameCodec.HEADER_BYTES)
        buf.putInt(0, magic)
        FrameCodec.check(buf, 0, FrameCodec.HEADER_BYTES, 0)
      }
      rejected.describe() should startWith(sentence)
    }
  }
}
