namespace Queue.Core.Jobs;

/// <summary>A job's lanes summed up (<see cref="Sql.JobSql.JobLanes"/>), as its status and its explanation read them.</summary>
internal sealed class JobLanesRow
{
    public long Lanes { get; set; }

    public long? Value { get; set; }

    public string? Mode { get; set; }

    public long? Blocked { get; set; }

    /// <summary>1 when every lane is due: all wait for a claim, none is hidden.</summary>
    public long? AllWaiting { get; set; }

    /// <summary>1 when any lane is due, blocked or not.</summary>
    public long? AnyClaimable { get; set; }

    /// <summary>1 when any lane is due and not blocked.</summary>
    public long? Claimable { get; set; }
}
