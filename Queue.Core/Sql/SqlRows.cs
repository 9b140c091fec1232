using System.Globalization;
using System.Text;

namespace Queue.Core.Sql;

/// <summary>
/// Multi-row VALUES with numbered parameters, for statements whose row count is only known per call. The text holds
/// parameter names only, never values.
/// </summary>
internal static class SqlRows
{
    /// <summary>
    /// Rows per multi-row statement whose rows each pick their values from a CASE: each row's arms are searched in
    /// order, so one statement for a thousand rows would make a million comparisons.
    /// </summary>
    public const int CaseRowsPerStatement = 64;

    /// <summary>
    /// Values per IN list that must be read as point ranges. Past eq_range_index_dive_limit (200 in MariaDB 10.11) the
    /// optimizer estimates an IN list from index statistics instead of diving for each value, and may then prefer a
    /// full index scan: the lane janitor's read of 219 dry jobs walked all 19,542 entries of ordering's primary key
    /// (slow query log with query plans, 16-worker drain, 2026-11-29), a cost that grows with the queue.
    /// </summary>
    public const int InListValues = 128;

    /// <summary>
    /// <paramref name="head"/>, then <paramref name="count"/> copies of <paramref name="row"/> separated by commas, each
    /// with <c>#</c> replaced by its index (<c>#+1</c> by its index plus one), then <paramref name="tail"/>.
    /// </summary>
    public static string Values(string head, string row, int count, string tail) =>
        new StringBuilder(head.Length + (count * (row.Length + 8)) + tail.Length)
            .Append(head).Append('\n').Append(Join(row, count, ",\n")).Append('\n').Append(tail).ToString();

    /// <summary>
    /// <paramref name="count"/> copies of <paramref name="row"/> separated by <paramref name="separator"/>, each with
    /// <c>#</c> replaced by its index (<c>#+1</c> by its index plus one): <c>Join("@i#", 3, ", ")</c> is <c>@i0, @i1, @i2</c>.
    /// </summary>
    public static string Join(string row, int count, string separator)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(count, 1);
        var sql = new StringBuilder(count * (row.Length + separator.Length + 4));
        for (var i = 0; i < count; i++)
        {
            if (i > 0)
            {
                sql.Append(separator);
            }
            sql.Append(Row(row, i));
        }
        return sql.ToString();
    }

    /// <summary>Row <paramref name="index"/> of a multi-row statement: <c>#</c> replaced by the index, <c>#+1</c> by the index plus one.</summary>
    public static string Row(string row, int index) =>
        row.Replace("#+1", (index + 1).ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal)
            .Replace("#", index.ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal);

    /// <summary>The name of the <paramref name="index"/>-th row's parameter <paramref name="prefix"/> (<c>@c</c> gives <c>@c0</c>, ...).</summary>
    public static string Parameter(string prefix, int index) => prefix + index.ToString(CultureInfo.InvariantCulture);
}
