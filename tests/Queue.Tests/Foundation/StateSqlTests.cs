using System.Globalization;
using System.Text.RegularExpressions;
using Queue.Core.Jobs;
using Queue.Core.Sql;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>docs/DESIGN.md "States": SQL names every state it writes, and the names mean what C#'s do. Reads files only.</summary>
public sealed partial class StateSqlTests
{
    [Fact]
    public void The_states_SQL_names_are_the_numbers_of_the_states_CSharp_names()
    {
        static string Sql(int state) => state.ToString(CultureInfo.InvariantCulture);
        Assert.Equal([Sql(ItemStates.Ready), Sql(ItemStates.Leased), Sql(ItemStates.Done), Sql(ItemStates.Dead), Sql(ItemStates.Cancelled)],
            [ItemStateSql.Ready, ItemStateSql.Leased, ItemStateSql.Done, ItemStateSql.Dead, ItemStateSql.Cancelled]);
        Assert.Equal([Sql(JobStates.Open), Sql(JobStates.Closed), Sql(JobStates.Done), Sql(JobStates.Cancelled)],
            [JobStateSql.Open, JobStateSql.Closed, JobStateSql.Done, JobStateSql.Cancelled]);
        Assert.Equal(["0", "1"], [KeyStateSql.Running, KeyStateSql.Completed]);
    }

    [Fact]
    public void No_statement_in_Queue_Core_Sql_compares_or_sets_a_state_as_a_bare_number()
    {
        var bare = Directory.GetFiles(Path.Combine(RepoDirectory.Root(), "Queue.Core", "Sql"), "*.cs")
            .SelectMany(f => File.ReadLines(f).Select((line, i) => (File: Path.GetFileName(f), Line: i + 1, Text: line)))
            .Where(l => BareState().IsMatch(l.Text))
            .Select(l => $"{l.File}:{l.Line}: {l.Text.Trim()}")
            .ToList();
        Assert.Empty(bare);
    }

    [GeneratedRegex(@"\bstate\s*(=|<>|!=|<|>|IN)\s*\(?\s*\d")]
    private static partial Regex BareState();
}
