using System.Security.Cryptography;
using Queue.Core.Jobs;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>An item's row as a finish (complete, fail) reads it, locked.</summary>
internal sealed record FinishRow(long Id, long JobId, string Task, sbyte State, byte[]? LeaseToken, DateTime DueAt, int Attempts, string? Worker,
    DateTime? LeaseExpiresAt)
{
    /// <summary>
    /// This lease's attempt: a lease handed out from the claim-ahead buffer and not written down yet is still a
    /// reservation in the row, whose attempt the finishing statement counts (<see cref="ClaimSql.AttemptOfHandout"/>).
    /// </summary>
    public int Attempt => LeaseExpiresAt is null ? Attempts + 1 : Attempts;

    /// <summary>Leased, by this token, and not expired: anything else is a stale or foreign lease.</summary>
    public bool IsLiveLease(byte[] token, DateTime now) =>
        State == ItemStates.Leased && LeaseToken is not null && CryptographicOperations.FixedTimeEquals(LeaseToken, token) && DueAt > now;

    /// <summary>Done, by this very token: the completion it asks for has already been recorded (<see cref="ClaimSql.CompleteItems"/>).</summary>
    public bool CompletedBy(byte[] token) =>
        State == ItemStates.Done && LeaseToken is not null && CryptographicOperations.FixedTimeEquals(LeaseToken, token);
}
