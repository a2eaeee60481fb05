package io.orbite.engine.security;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** The two proofs of the handshake: HMAC-SHA256 under the shared secret, and Ed25519 signatures. */
final class Signatures {
  /** Bytes of an HMAC-SHA256. */
  static final int MAC_BYTES = 32;

  /** Bytes of an Ed25519 signature. */
  static final int SIGNATURE_BYTES = 64;

  private Signatures() {}

  static byte[] mac(byte[] secret, byte[] message) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      return mac.doFinal(message);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is unavailable in this JDK", e);
    }
  }

  /** Whether {@code proof} is the HMAC of {@code message}, compared in constant time. */
  static boolean macMatches(byte[] secret, byte[] message, byte[] proof) {
    return proof != null && MessageDigest.isEqual(mac(secret, message), proof);
  }

  static byte[] sign(PrivateKey key, byte[] message) {
    try {
      Signature s = Signature.getInstance("Ed25519");
      s.initSign(key);
      s.update(message);
      return s.sign();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("Ed25519 signing failed: " + e.getMessage(), e);
    }
  }

  static boolean verify(PublicKey key, byte[] message, byte[] signature) {
    if (signature == null || signature.length != SIGNATURE_BYTES) {
      return false;
    }
    try {
      Signature s = Signature.getInstance("Ed25519");
      s.initVerify(key);
      s.update(message);
      return s.verify(signature);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }
}
