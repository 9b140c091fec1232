using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// A claim's item writes not sent yet: its leases go out as one statement however many there are
/// (<see cref="ClaimSql.LeaseItems"/>), and so do its claim-ahead reservations (<see cref="ClaimSql.ReserveItems"/>). A
/// claim of eight one-item jobs used to send eight lease statements (docs/DESIGN.md "Claim and completion round trips").
/// </summary>
internal sealed class ClaimWrites(DateTime now)
{
    private readonly List<(long Id, byte[] Token, DateTime Until, string? Worker, bool Expired)> leases = [];
    private readonly List<(long Id, byte[] Token, DateTime Until, string? Worker, bool Expired)> reservations = [];

    public bool IsEmpty => leases.Count == 0 && reservations.Count == 0;

    /// <summary>Gives item <paramref name="id"/> to <paramref name="worker"/> until <paramref name="until"/>; <paramref name="expired"/>: it was an expired lease.</summary>
    public void Lease(long id, byte[] token, DateTime until, string? worker, bool expired) => leases.Add((id, token, until, worker, expired));

    /// <summary>Holds item <paramref name="id"/> for this process's claim-ahead buffer until <paramref name="until"/>.</summary>
    public void Reserve(long id, byte[] token, DateTime until, bool expired) => reservations.Add((id, token, until, null, expired));

    /// <summary>Adds every pending write to <paramref name="batch"/> and forgets them.</summary>
    public void MoveTo(MySqlBatch batch)
    {
        foreach (var chunk in leases.Chunk(SqlRows.CaseRowsPerStatement))
        {
            batch.BatchCommands.Add(BatchCommand.Rows(ClaimSql.LeaseItems(chunk.Length, Expired(chunk)), chunk, now,
                ("@i", l => l.Id), ("@t", l => l.Token), ("@u", l => l.Until), ("@w", l => l.Worker)));
        }
        leases.Clear();
        foreach (var chunk in reservations.Chunk(SqlRows.CaseRowsPerStatement))
        {
            batch.BatchCommands.Add(BatchCommand.Rows(ClaimSql.ReserveItems(chunk.Length, Expired(chunk)), chunk, now,
                ("@i", l => l.Id), ("@t", l => l.Token), ("@u", l => l.Until)));
        }
        reservations.Clear();
    }

    private static List<int> Expired((long Id, byte[] Token, DateTime Until, string? Worker, bool Expired)[] chunk) =>
        Enumerable.Range(0, chunk.Length).Where(k => chunk[k].Expired).ToList();
}
