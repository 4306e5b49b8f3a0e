/// The statements of `send-temp-passwords`; every value is a `$n` parameter and
/// every time comes from the database clock.
struct SendTempPasswordsQueries {
    let schema: String

    /// `1m × 2^(n)`, capped at a day, for `n` = attempts made before this one.
    private static func backoff(_ n: String) -> String {
        "least(power(2::float8, \(n)), 1440) * interval '1 minute'"
    }

    var countExpired: String {
        "SELECT count(*) AS n FROM \(schema).users WHERE temp_password_expires_at <= now()"
    }

    /// Up to `$1` users whose temporary password expired, leaving out `$2` (blocked this run).
    var expiredUsers: String {
        """
        SELECT id FROM \(schema).users WHERE temp_password_expires_at <= now() AND id <> ALL($2)
        ORDER BY temp_password_expires_at LIMIT $1
        """
    }

    var clearExpired: String {
        """
        WITH due AS (\(expiredUsers) FOR NO KEY UPDATE SKIP LOCKED)
        UPDATE \(schema).users u
        SET temp_password_hash = NULL, temp_password_expires_at = NULL, must_change_password = false
        FROM due WHERE u.id = due.id
        """
    }

    var clearExpiredOne: String {
        """
        UPDATE \(schema).users
        SET temp_password_hash = NULL, temp_password_expires_at = NULL, must_change_password = false
        WHERE id = $1 AND temp_password_expires_at <= now()
        """
    }

    /// `$1`, `$2`: keyset cursor `(requested_at, id)`; `$3`: batch size.
    var dueRequests: String {
        """
        SELECT id, requested_at FROM \(schema).password_reset_requests
        WHERE status = 'pending' AND next_attempt_at <= now()
          AND (requested_at, id) > ($1::timestamptz, $2::bigint)
        ORDER BY requested_at, id LIMIT $3
        """
    }

    var claimRequest: String { peekRequest + "\nFOR UPDATE SKIP LOCKED" }

    var peekRequest: String {
        """
        SELECT id, email, attempts, last_error FROM \(schema).password_reset_requests
        WHERE id = $1 AND status = 'pending' AND next_attempt_at <= now()
        """
    }

    /// The account for an address, case-insensitively; a live one before a deleted one.
    var account: String {
        """
        SELECT id, email, display_name, deleted_at IS NOT NULL AS deleted FROM \(schema).users
        WHERE lower(email) = lower($1)
        ORDER BY deleted_at IS NOT NULL, id LIMIT 1
        """
    }

    /// `last_error` of a request whose mail may have gone out (sending, or sent but not recorded).
    static let inFlight = "sending interrupted; delivery unknown"

    /// Mails to address `$1` in the last hour: those recorded `sent`, and those that
    /// may have gone out without their result being recorded (`last_error` = `$2`,
    /// attempted when `markInFlight` pushed `next_attempt_at` out by its backoff).
    var recentSends: String {
        """
        SELECT (SELECT count(*) FROM \(schema).password_reset_requests
                WHERE status = 'sent' AND lower(email) = lower($1) AND sent_at > now() - interval '1 hour')
             + (SELECT count(*) FROM \(schema).password_reset_requests
                WHERE status = 'pending' AND lower(email) = lower($1) AND last_error = $2 AND attempts > 0
                  AND next_attempt_at - \(Self.backoff("attempts - 1")) > now() - interval '1 hour') AS n
        """
    }

    var settle: String {
        "UPDATE \(schema).password_reset_requests SET status = $2, last_error = $3 WHERE id = $1"
    }

    /// Stores the new hash if the account is still live under the address we
    /// read; returns the previous temporary-password columns and the new expiry
    /// for the message (UTC).
    var storePassword: String {
        """
        WITH previous AS (
            SELECT id, temp_password_hash, temp_password_expires_at, must_change_password FROM \(schema).users
            WHERE id = $1 AND email = $2 AND deleted_at IS NULL
            FOR NO KEY UPDATE
        )
        UPDATE \(schema).users u
        SET temp_password_hash = $3,
            temp_password_expires_at = now() + $4::bigint * interval '1 microsecond',
            must_change_password = true
        FROM previous WHERE u.id = previous.id
        RETURNING previous.temp_password_hash AS previous_hash,
                  previous.temp_password_expires_at AS previous_expires_at,
                  previous.must_change_password AS previous_must_change,
                  to_char(u.temp_password_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"') AS expires_at
        """
    }

    /// Before sending: count the attempt and push the request out of reach, so
    /// a crash mid-send is retried after the backoff, not at once.
    var markInFlight: String {
        """
        UPDATE \(schema).password_reset_requests
        SET attempts = attempts + 1, next_attempt_at = now() + \(Self.backoff("attempts")), last_error = $2
        WHERE id = $1
        """
    }

    var recordSent: String {
        "UPDATE \(schema).password_reset_requests SET status = 'sent', sent_at = now(), last_error = NULL WHERE id = $1"
    }

    /// `$2`: the error; `$3`: `max_attempts`; `$4`: a permanent failure (fail now).
    /// `attempts` already counts this attempt.
    var recordFailure: String {
        """
        UPDATE \(schema).password_reset_requests
        SET last_error = $2,
            status = CASE WHEN $4::boolean OR attempts >= $3 THEN 'failed' ELSE 'pending' END,
            next_attempt_at = CASE WHEN $4::boolean OR attempts >= $3 THEN next_attempt_at
                                   ELSE now() + \(Self.backoff("attempts - 1")) END
        WHERE id = $1
        RETURNING status
        """
    }

    /// Puts back the previous temporary password, unless someone replaced ours meanwhile.
    var restorePassword: String {
        """
        UPDATE \(schema).users
        SET temp_password_hash = $3, temp_password_expires_at = $4::timestamptz, must_change_password = $5
        WHERE id = $1 AND temp_password_hash = $2
        """
    }
}
