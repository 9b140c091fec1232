namespace Queue.Core.Claims;

/// <summary>
/// One task filter's callers in a claim transaction: a slot for each item each caller still wants, then the surplus
/// claimed ahead as reservations, as a <see cref="ClaimOrder"/>; the items taken are shared back out per caller in
/// request order, and the rest go to <see cref="NewBuffer"/>.
/// </summary>
internal sealed class ClaimGroup(string key, IReadOnlyList<string> tasks, IReadOnlyList<ClaimRequest> requests, int surplus)
{
    private readonly List<int> slotOwners = [];
    private ClaimOrder? order;

    public string Key { get; } = key;

    public IReadOnlyList<string> Tasks { get; } = tasks;

    /// <summary>Items claimed ahead by this transaction, for the buffer.</summary>
    public List<TakenItem> NewBuffer { get; } = [];

    /// <summary>What each caller gets, by position in the requests.</summary>
    public List<TakenItem>[] Results { get; } = requests.Select(_ => new List<TakenItem>()).ToArray();

    /// <summary>The transaction's order for these callers. Asked again, it starts over: the slots' owners are kept
    /// once, so <see cref="Share"/> never hands a caller a reservation meant for the buffer.</summary>
    /// <param name="firstRound">Becomes the order's <see cref="ClaimOrder.FirstRound"/>.</param>
    public ClaimOrder Order(DateTime now, ClaimOptions o, FirstRoundWatch? firstRound = null)
    {
        slotOwners.Clear();
        var slots = new List<ClaimSlot>();
        for (var i = 0; i < requests.Count; i++)
        {
            for (var k = 0; k < requests[i].Max; k++)
            {
                slots.Add(new ClaimSlot(requests[i].Worker, now.AddSeconds(requests[i].LeaseSeconds), Reservation: false));
                slotOwners.Add(i);
            }
        }
        var reservedUntil = now.AddSeconds(o.ReservationSeconds);
        for (var k = 0; k < surplus; k++)
        {
            slots.Add(new ClaimSlot(null, reservedUntil, Reservation: true));
        }
        order = new ClaimOrder(Tasks, slots) { FirstRound = firstRound };
        return order;
    }

    /// <summary>The tenants the claim saw with work first (<see cref="ClaimOrder.Waiting"/>), once it ran.</summary>
    public HashSet<long> Waiting => order?.Waiting ?? [];

    /// <summary>Gives each caller its items from what the transaction took for <see cref="Order"/>'s slots, in slot order.</summary>
    public void Share(IReadOnlyList<TakenItem> taken)
    {
        for (var k = 0; k < taken.Count; k++)
        {
            if (k < slotOwners.Count)
            {
                Results[slotOwners[k]].Add(taken[k]);
            }
            else
            {
                NewBuffer.Add(taken[k]);
            }
        }
    }
}
