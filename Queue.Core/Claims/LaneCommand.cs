using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>A statement over many lanes (<see cref="ClaimSql.LockLanes"/> and its kin): lane k in <c>@j</c>k and <c>@k</c>k.</summary>
internal static class LaneCommand
{
    /// <summary>
    /// Lanes per statement: the hint's CASE searches its arms in order for each row (<see cref="SqlRows.CaseRowsPerStatement"/>).
    /// It was 16 while lanes were a row-constructor list, which MariaDB's range optimizer paid for more than linearly.
    /// </summary>
    public const int MaxLanes = SqlRows.CaseRowsPerStatement;

    /// <param name="sql">The statement for the lanes' tasks, lane k's task at k (<see cref="ClaimSql.InLanes"/>).</param>
    public static MySqlBatchCommand Batch(Func<IReadOnlyList<string>, string> sql, IReadOnlyCollection<(long JobId, string Task)> lanes)
    {
        var cmd = new MySqlBatchCommand(sql(lanes.Select(l => l.Task).ToList()));
        AddLanes(cmd.Parameters, lanes);
        return cmd;
    }

    public static void AddLanes(MySqlParameterCollection parameters, IReadOnlyCollection<(long JobId, string Task)> lanes)
    {
        parameters.AddNumbered("@j", lanes.Select(l => l.JobId));
        parameters.AddNumbered("@k", lanes.Select(l => l.Task));
    }
}
