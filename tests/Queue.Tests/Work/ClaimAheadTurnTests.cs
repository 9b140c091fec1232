using MySqlConnector;
using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>
/// The claim-ahead buffer's turns when a tenant's next item is in the database, not here: a caller sent to a claim
/// transaction for that tenant's turn takes it there, and the caller after it is handed the held item whose turn it then
/// is (docs/DESIGN.md "Claim-ahead that keeps the policy").
/// </summary>
public sealed class ClaimAheadTurnTests
{
    private const long Flood = 1;
    private const long Small = 2;
    private static readonly DateTime Now = new(2026, 11, 29, 2, 0, 0, DateTimeKind.Utc);

    [Fact]
    public void A_tenant_waiting_in_the_database_with_the_earlier_turn_stops_the_handouts_and_is_named()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();

        Assert.Empty(buffer.Take(1, Now, turns, out var inDatabase));
        Assert.Equal(Flood, inDatabase);
    }

    [Fact]
    public void A_turn_promised_to_the_tenant_in_the_database_lets_the_next_caller_take_the_held_item_whose_turn_follows()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();

        buffer.Promise(Flood, 1);
        var given = buffer.Take(1, Now, turns, out var inDatabase);

        Assert.Equal(Small, Assert.Single(given).TenantId);
        Assert.Null(inDatabase);
        // Turns alternate: the small tenant, charged, is now past the flood's promised turn.
        Assert.Empty(buffer.Take(1, Now, turns, out inDatabase));
        Assert.Equal(Flood, inDatabase);
    }

    [Fact]
    public void A_released_promise_gives_the_turn_back_to_the_tenant_in_the_database()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();

        buffer.Promise(Flood, 2);
        buffer.Release([(Flood, 2)]);

        Assert.Empty(buffer.Take(1, Now, turns, out var inDatabase));
        Assert.Equal(Flood, inDatabase);
    }

    [Fact]
    public void A_promise_counts_by_the_tenants_weight()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();
        turns.Weights[Flood] = 2;

        // Half a turn each at weight 2: one promised item brings the flood level with the small tenant, and the tie
        // goes to the lower id; a second passes it.
        buffer.Promise(Flood, 1);
        Assert.Empty(buffer.Take(1, Now, turns, out _));
        buffer.Promise(Flood, 1);
        Assert.Equal(Small, Assert.Single(buffer.Take(1, Now, turns, out _)).TenantId);
    }

    [Fact]
    public void A_tenant_waiting_in_the_database_is_ranked_where_a_claim_would_lift_it_not_at_the_pass_it_idled_at()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();
        // The flood idled at pass 0 while the small tenant was served; a claim would rank it at the floor, 0.75.
        turns.Floor = 0.75;

        Assert.Equal(Small, Assert.Single(buffer.Take(1, Now, turns, out var inDatabase)).TenantId);
        Assert.Null(inDatabase);
        // Charged, the small tenant's turn (1.5) comes after the flood's lifted one.
        Assert.Empty(buffer.Take(1, Now, turns, out inDatabase));
        Assert.Equal(Flood, inDatabase);
    }

    [Fact]
    public void Callers_waiting_on_a_claim_transaction_are_shared_by_turn_between_a_new_tenant_and_the_one_in_the_database()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();
        turns.Passes[Small] = 0;

        // Small 0 takes the first caller (ties go to it: its items are here), the flood at 0 the second, then small 1,
        // flood 1, small 2: three of five, and never more than the three it holds.
        Assert.Equal(3, buffer.ParkedShareOf(Small, 5, turns));
        Assert.Equal(2, buffer.ParkedShareOf(Small, 3, turns));
        Assert.Equal(3, buffer.ParkedShareOf(Small, 8, turns));
    }

    [Fact]
    public void A_new_tenant_with_credit_left_takes_the_waiting_callers_ahead_of_the_tenant_in_the_database()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();
        turns.Passes[Small] = -3;

        Assert.Equal(3, buffer.ParkedShareOf(Small, 3, turns));
    }

    [Fact]
    public void A_new_tenant_behind_the_tenant_in_the_database_still_takes_one_waiting_caller()
    {
        var (buffer, turns) = SmallHeldFloodWaiting();
        turns.Passes[Small] = 5;

        Assert.Equal(1, buffer.ParkedShareOf(Small, 4, turns));
    }

    [Fact]
    public void With_no_other_tenant_known_the_new_tenant_shares_the_waiting_callers_with_a_newcomers_turn()
    {
        var turns = new Turns { Newcomer = 0 };
        turns.Passes[Small] = 0;
        var buffer = new ClaimAheadBuffer(["turns"]);
        for (var id = 1; id <= 6; id++)
        {
            buffer.Add(new TakenItem(id, 10, Small, id, "turns", 0, [1], Now.AddSeconds(30), Reservation: true), Now.AddSeconds(1), 0, byTenants: true);
        }

        Assert.Equal(3, buffer.ParkedShareOf(Small, 6, turns));
        Assert.Equal(0, buffer.ParkedShareOf(Flood, 6, turns));
    }

    /// <summary>
    /// The small tenant's items held, its turn at 0.5; the flood seen by the last claim with work in the database and
    /// nothing held, its turn at 0.
    /// </summary>
    private static (ClaimAheadBuffer Buffer, Turns Turns) SmallHeldFloodWaiting()
    {
        var turns = new Turns();
        turns.Passes[Flood] = 0;
        turns.Passes[Small] = 0.5;
        var buffer = new ClaimAheadBuffer(["turns"]);
        for (var id = 1; id <= 3; id++)
        {
            buffer.Add(new TakenItem(id, 10, Small, id, "turns", 0, [1], Now.AddSeconds(30), Reservation: true), Now.AddSeconds(1), 0, byTenants: true);
        }
        buffer.SawWaiting([Flood], Now);
        return (buffer, turns);
    }

    /// <summary>Turns as a fair policy keeps them: one item moves a tenant's pass by 1 / its weight.</summary>
    private sealed class Turns : ILaneSelector
    {
        public Dictionary<long, double> Passes { get; } = [];

        public Dictionary<long, int> Weights { get; } = [];

        public Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct) => throw new NotSupportedException();

        public void Claimed(long tenantId, int count) => Passes[tenantId] = Passes.GetValueOrDefault(tenantId) + (count * TurnLength(tenantId));

        /// <summary>The lowest turn a claim ranks a tenant at (a fair policy's virtual time less the return credit).</summary>
        public double Floor { get; set; } = double.MinValue;

        public double? TurnOf(long tenantId) => Passes.GetValueOrDefault(tenantId);

        public double? TurnInDatabaseOf(long tenantId) => Math.Max(Passes.GetValueOrDefault(tenantId), Floor);

        public double TurnLength(long tenantId) => 1.0 / Weights.GetValueOrDefault(tenantId, 1);

        /// <summary>Where a tenant no claim has seen would be ranked; null: the default, as a policy without one.</summary>
        public double? Newcomer { get; set; }

        public double? TurnOfNewcomer() => Newcomer;

        public bool TakesTurns => true;
    }
}
