using System.Text.RegularExpressions;
using CsCheck;
using Queue.Core;
using Queue.Core.Jobs;
using Queue.Core.Security;
using Queue.Core.Work;

namespace Queue.Tests.Reliability;

/// <summary>
/// Required reliability test 15, the validators: property tests over generated input (odd Unicode, SQL metacharacters,
/// huge and empty strings, out-of-range numbers). Every validator answers with field errors and never throws, and
/// accepts exactly what docs/CONTRACT.md allows.
/// </summary>
public sealed class ValidatorPropertyTests
{
    private const int Iterations = 3000;

    /// <summary>Strings as a fuzzer would send them: mostly short, sometimes huge, from hostile alphabets.</summary>
    private static readonly Gen<string> Hostile = Gen.OneOf<string>(
        Gen.String[Gen.Char["abcdefghijklmnopqrstuvwxyz0123456789-"], 0, 40],
        Gen.String[Gen.Char["'\";--/*%_\\\0\r\n\t <>&{}[]"], 0, 20],
        Gen.String[Gen.Char['\u0000', '\uffff'], 0, 60],
        Gen.OneOf("", " ", "\u200b", "é", "😀", "Ω≈ç√", "\ud800", "' OR 1=1 --", "Robert'); DROP TABLE jobs;--", "%00", "../../etc/passwd"),
        Gen.Int[0, 70_000].Select(n => new string('x', n)));

    private static readonly Gen<int?> AnyNumber = Gen.Nullable(Gen.OneOf<int>(Gen.Int[-5, 5000], Gen.Int, Gen.OneOf(int.MinValue, int.MaxValue, 0, -1)), 0.2);

    /// <summary>Null with probability <paramref name="p"/>: fields a client leaves out.</summary>
    private static Gen<T?> OrNull<T>(Gen<T> gen, double p)
        where T : class =>
        Gen.Select(Gen.Double[0, 1], gen, (roll, value) => roll < p ? null : value);

    /// <summary>0 to <paramref name="max"/> elements drawn (with repeats) from four generated ones.</summary>
    private static Gen<T[]> ArrayOf<T>(Gen<T> gen, int max) =>
        Gen.Select(gen, gen, gen, gen, Gen.Int[0, max], (a, b, c, d, n) =>
        {
            var pool = new[] { a, b, c, d };
            return Enumerable.Range(0, n).Select(i => pool[i % pool.Length]).ToArray();
        });

    private static readonly Regex TaskName = new("^[a-z0-9-]{1,32}$", RegexOptions.CultureInvariant);

    [Fact]
    public void A_task_list_is_accepted_exactly_when_it_holds_1_to_5_distinct_well_formed_names()
    {
        ArrayOf(OrNull(Hostile, 0.1), 8).Sample(tasks =>
        {
            var expected = tasks.Length is >= 1 and <= JobValidation.MaxTasks && tasks.All(t => t is not null && TaskName.IsMatch(t))
                && tasks.Distinct(StringComparer.Ordinal).Count() == tasks.Length;
            var error = Validation.Tasks(tasks!, JobValidation.MaxTasks, allowEmpty: false);
            Assert.Equal(expected, error is null);
        }, iter: Iterations);
    }

    [Fact]
    public void Job_and_document_fields_never_throw_and_accept_what_the_contract_allows()
    {
        Gen.Select(OrNull(Hostile, 0.1), OrNull(Hostile, 0.3)).Sample((name, type) =>
        {
            var jobName = JobValidation.JobName(name);
            Assert.Equal(name is { Length: >= 1 and <= 200 } && !string.IsNullOrWhiteSpace(name), jobName is null);
            var errors = JobValidation.Document(name, type, "name", "contentType");
            Assert.All(errors.Keys, k => Assert.Contains(k, new[] { "name", "contentType" }));
            Assert.All(errors.Values, v => Assert.False(string.IsNullOrEmpty(Assert.Single(v))));
        }, iter: Iterations);
    }

    [Fact]
    public void Next_body_rules_name_only_known_fields_and_accept_every_in_range_body()
    {
        Gen.Select(OrNull(Hostile, 0.5), OrNull(ArrayOf(Hostile, 25), 0.3), AnyNumber, AnyNumber, AnyNumber).Sample((worker, tasks, max, wait, lease) =>
        {
            var errors = WorkValidation.Next(worker, tasks, max, wait, lease);
            Assert.All(errors.Keys, k => Assert.Contains(k, new[] { "worker", "tasks", "max", "wait", "lease" }));
            Assert.Equal(max is < 1 or > 100, errors.ContainsKey("max"));
            Assert.Equal(wait is < 0 or > 30, errors.ContainsKey("wait"));
            Assert.Equal(lease is < 10 or > 3600, errors.ContainsKey("lease"));
            Assert.Equal(worker is { Length: > 200 }, errors.ContainsKey("worker"));
            Assert.Equal(tasks is not null && (tasks.Length > 20 || !tasks.All(TaskName.IsMatch)), errors.ContainsKey("tasks"));
        }, iter: Iterations);
    }

    [Fact]
    public void Tenant_settings_never_throw_and_name_every_bad_field()
    {
        Gen.Select(Hostile, ArrayOf(Hostile, 7), AnyNumber, AnyNumber, AnyNumber).Sample((name, tasks, weight, rate, attempts) =>
        {
            var settings = new TenantSettings(tasks, Weight: weight ?? 1, RateLimit: rate ?? 0, MaxAttempts: attempts ?? 5);
            var errors = TenantValidation.Tenant(name, settings);
            Assert.Equal(!Validation.TenantName().IsMatch(name), errors.ContainsKey("name"));
            Assert.Equal(weight is < 1 or > 1000, errors.ContainsKey("weight"));
            Assert.Equal(attempts is < 1 or > 100, errors.ContainsKey("maxAttempts"));
        }, iter: Iterations);
    }

    [Fact]
    public void A_paging_cursor_never_throws_and_every_cursor_the_service_makes_decodes_back()
    {
        Hostile.Sample(text => Assert.True(Cursor.Decode(text, 2) is null or { Length: 2 }), iter: Iterations);
        Gen.Select(Gen.Long[0, long.MaxValue], Gen.Long[0, long.MaxValue]).Sample((a, b) => Assert.Equal([a, b], Cursor.Decode(Cursor.Encode(a, b), 2)!), iter: Iterations);
    }
}
